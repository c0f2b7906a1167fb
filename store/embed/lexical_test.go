package embed_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode"

	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/store/embed"
)

func TestLexicalNameAndDim(t *testing.T) {
	t.Parallel()
	for _, dim := range []int{1, 64, 256, 16000} {
		l := embed.NewLexical(dim)
		if want := fmt.Sprint("lexical-xxh3-", dim); l.Name() != want || l.Dim() != dim {
			t.Errorf("NewLexical(%d): Name, Dim = %q, %d; want %q, %d", dim, l.Name(), l.Dim(), want, dim)
		}
		if _, err := l.Embed(t.Context(), []string{"ok"}); err != nil {
			t.Errorf("NewLexical(%d).Embed: %v", dim, err)
		}
	}
}

func TestLexicalRejectsBadDimension(t *testing.T) {
	t.Parallel()
	for _, dim := range []int{0, -1, 16001} {
		_, err := embed.NewLexical(dim).Embed(t.Context(), []string{"text"})
		if !errors.Is(err, embed.ErrInvalidConfig) || !strings.Contains(err.Error(), "outside 1..16000") {
			t.Errorf("NewLexical(%d).Embed = %v; want ErrInvalidConfig naming the range", dim, err)
		}
	}
}

// Vectors are persisted under the name "lexical-xxh3-<dim>", so the
// scheme must never change under that name. This restates the documented
// scheme independently (word buckets ±1 with seed 0x5eed0001; 3-grams of
// "<word>" ±1/√n with seed 0x5eed0003; sign from the top bit; unit length)
// and compares; changing the scheme needs a new name.
func TestLexicalFollowsItsScheme(t *testing.T) {
	t.Parallel()
	const dim = 32
	add := func(v []float64, h uint64, w float64) {
		if h>>63 == 1 {
			w = -w
		}
		v[h%dim] += w
	}
	for _, text := range []string{"Checkpoint saved", "naïve café, 42 times", "a"} {
		want := make([]float64, dim)
		for _, word := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) {
			add(want, xxh3.HashStringSeed(word, 0x5eed_0001), 1)
			padded := []rune("<" + word + ">")
			n := len(padded) - 2
			for i := 0; i+3 <= len(padded); i++ {
				add(want, xxh3.HashStringSeed(string(padded[i:i+3]), 0x5eed_0003), 1/math.Sqrt(float64(n)))
			}
		}
		var sq float64
		for _, x := range want {
			sq += x * x
		}
		got := embedOne(t, embed.NewLexical(dim), text)
		for j := range want {
			if math.Abs(float64(got[j])-want[j]/math.Sqrt(sq)) > 1e-6 {
				t.Errorf("%q: got %v, want %v", text, got, want)
				break
			}
		}
	}
}

// Shared words and shared word pieces raise similarity; the lexical
// embedder knows nothing else.
func TestLexicalSimilarity(t *testing.T) {
	t.Parallel()
	l := embed.NewLexical(256)
	cases := []struct{ a, near, far string }{
		{"checkpoint saved to postgres", "postgres checkpoint", "bake the bread"},
		{"checkpoints", "checkpoint", "superstep"},
		{"postgresql", "postgres", "mysql"},
	}
	for _, tc := range cases {
		a := embedOne(t, l, tc.a)
		near, far := cosine(a, embedOne(t, l, tc.near)), cosine(a, embedOne(t, l, tc.far))
		if near <= far {
			t.Errorf("cos(%q, %q) = %.3f is not above cos(%q, %q) = %.3f", tc.a, tc.near, near, tc.a, tc.far, far)
		}
	}
}

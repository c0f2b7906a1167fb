package embed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

func embedOne(t *testing.T, e embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(t.Context(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 1 || len(v[0]) != e.Dim() {
		t.Fatalf("Embed(%q) returned %d vectors of length %d, want 1 of %d", text, len(v), len(v[0]), e.Dim())
	}
	return v[0]
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// offlineEmbedders are the embedders that need no network; the
// properties below hold for both.
func offlineEmbedders() []embedder {
	return []embedder{embed.Offline(), embed.NewLexical(256)}
}

func TestOfflineEmbeddersVectorShape(t *testing.T) {
	t.Parallel()
	for _, e := range offlineEmbedders() {
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				text     string
				wantZero bool
			}{
				{"The cat sat on the mat.", false},
				{"checkpoint", false},
				{"", true},
				{"   ", true},
				{"?!… — ***", true},
			}
			for _, tc := range cases {
				n := norm(embedOne(t, e, tc.text))
				if tc.wantZero && n != 0 {
					t.Errorf("%q: norm %v, want the zero vector (no tokens)", tc.text, n)
				}
				if !tc.wantZero && math.Abs(n-1) > 1e-5 {
					t.Errorf("%q: norm %v, want 1", tc.text, n)
				}
			}
		})
	}
}

// Case and punctuation do not change a text's meaning to these embedders,
// and a batch embeds each text as if it were alone.
func TestOfflineEmbeddersNormaliseAndBatchIndependently(t *testing.T) {
	t.Parallel()
	for _, e := range offlineEmbedders() {
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			pairs := [][2]string{
				{"Hello, World!", "hello world"},
				{"ÉCOLE d'été", "école d été"},
				{"tabs\tand\nnewlines", "tabs and newlines"},
			}
			for _, p := range pairs {
				if a, b := embedOne(t, e, p[0]), embedOne(t, e, p[1]); fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("%q and %q embed differently", p[0], p[1])
				}
			}
			texts := []string{"first text about dogs", "", "second text about the stock market", "first text about dogs"}
			batch, err := e.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, text := range texts {
				if fmt.Sprint(batch[i]) != fmt.Sprint(embedOne(t, e, text)) {
					t.Errorf("text %d %q embeds differently in a batch than alone", i, text)
				}
			}
			// The returned vectors are independent: changing one must not
			// change its neighbour in the same batch.
			batch[0] = append(batch[0], 42)
			batch[1][0] = 7
			if batch[2][0] == 7 || len(batch[1]) != e.Dim() {
				t.Error("vectors in one batch share storage")
			}
		})
	}
}

func TestOfflineEmbeddersHonourCancellation(t *testing.T) {
	t.Parallel()
	for _, e := range offlineEmbedders() {
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
				t.Fatalf("Embed(cancelled) = %v, want context.Canceled", err)
			}
		})
	}
}

func TestOfflineIdentity(t *testing.T) {
	t.Parallel()
	e := embed.Offline()
	if e.Name() != "glove100d-sif" || e.Dim() != 100 {
		t.Errorf("Name, Dim = %q, %d; want glove100d-sif, 100", e.Name(), e.Dim())
	}
	if err := e.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
}

// The offline embedder is a bag of words over its vocabulary: order and
// unknown words do not count. These are limitations users should expect,
// so they are pinned.
func TestOfflineBagOfWords(t *testing.T) {
	t.Parallel()
	e := embed.Offline()
	pairs := [][2]string{
		{"dog bites man", "man bites dog"},
		{"the cat qzxwvjk sat", "the cat sat"},
	}
	for _, p := range pairs {
		if cosine(embedOne(t, e, p[0]), embedOne(t, e, p[1])) < 0.9999 {
			t.Errorf("%q and %q differ; a bag of words should not tell them apart", p[0], p[1])
		}
	}
	if n := norm(embedOne(t, e, "qzxwvjk blorptastic")); n != 0 {
		t.Errorf("unknown words only: norm %v, want the zero vector", n)
	}
}

// Related words land closer than unrelated ones: the reason to ship word
// vectors at all.
func TestOfflineRelatedness(t *testing.T) {
	t.Parallel()
	e := embed.Offline()
	cases := []struct{ a, near, far string }{
		{"dog", "puppy", "inflation"},
		{"database", "sql query", "banana"},
		{"car", "automobile", "poetry"},
		{"the doctor treated the patient", "a physician cared for the sick man", "stock prices fell sharply"},
	}
	for _, tc := range cases {
		a := embedOne(t, e, tc.a)
		near, far := cosine(a, embedOne(t, e, tc.near)), cosine(a, embedOne(t, e, tc.far))
		if near <= far {
			t.Errorf("cos(%q, %q) = %.3f is not above cos(%q, %q) = %.3f", tc.a, tc.near, near, tc.a, tc.far, far)
		}
	}
}

// Many goroutines hitting the lazy load at once must all get the same,
// fully loaded model (run with -race).
func TestOfflineConcurrentUse(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	results := make([][]float32, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Go(func() {
			v, err := embed.Offline().Embed(context.Background(), []string{"concurrent readers share one model"})
			if err == nil {
				results[i] = v[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if fmt.Sprint(results[i]) != fmt.Sprint(results[0]) {
			t.Errorf("goroutine %d got a different vector", i)
		}
	}
}

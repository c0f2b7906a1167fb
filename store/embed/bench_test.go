package embed_test

import (
	"testing"

	"github.com/superstep-dev/superstep/store/embed"
)

// benchTexts are store-sized texts: a sentence or two, like the memories
// and documents an agent indexes.
var benchTexts = func() []string {
	var texts []string
	for _, d := range qualityDocs {
		texts = append(texts, d)
	}
	for _, q := range qualityQueries {
		texts = append(texts, q.query)
	}
	return texts
}()

func benchmarkEmbed(b *testing.B, e embedder) {
	if _, err := e.Embed(b.Context(), benchTexts[:1]); err != nil { // load outside the timer
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(b.Context(), benchTexts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchTexts)), "ns/text")
}

// BenchmarkOfflineEmbed embeds a batch of short texts with the GloVe SIF
// embedder; ns/text is the cost of one text.
func BenchmarkOfflineEmbed(b *testing.B) { benchmarkEmbed(b, embed.Offline()) }

// BenchmarkLexicalEmbed is the same workload with the 256-d lexical
// fallback.
func BenchmarkLexicalEmbed(b *testing.B) { benchmarkEmbed(b, embed.NewLexical(256)) }

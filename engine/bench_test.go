package engine_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

// BenchmarkLoop1000: one node increments a counter and routes back to
// itself until 1000; the metric is per superstep.
func BenchmarkLoop1000(b *testing.B) {
	g := countTo(b, 1000)
	ctx := context.Background()
	in := engine.Update{"n": 0}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Invoke(ctx, in, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1001, "ns/superstep")
}

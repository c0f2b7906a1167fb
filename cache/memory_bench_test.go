package cache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/cache"
)

// BenchmarkMemoryGetHit looks up keys that are all cached, as the engine
// does once per superstep for the cached tasks of the step.
func BenchmarkMemoryGetHit(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			m := cache.NewMemory(nil)
			defer m.Close()
			keys := make([]cache.Key, n)
			entries := make([]cache.Entry, n)
			for i := range n {
				keys[i] = cache.Key{Namespace: "__pregel_ns_writes|app.node|node", Key: fmt.Sprintf("%032x", i)}
				entries[i] = cache.Entry{Key: keys[i], Value: make([]byte, 256)}
			}
			if err := m.Set(ctx, entries); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				got, err := m.Get(ctx, keys)
				if err != nil || len(got) != n {
					b.Fatalf("Get = %d hits, %v; want %d", len(got), err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}

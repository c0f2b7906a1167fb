package pgcache_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/cache/pgcache"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

func benchCache(b *testing.B) *pgcache.Cache {
	b.Helper()
	c, err := pgcache.New(pgtest.Schema(b, nil), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func benchEntries(n, size int, prefix string) []cache.Entry {
	entries := make([]cache.Entry, n)
	for i := range n {
		entries[i] = cache.Entry{
			Key:   cache.Key{Namespace: "__pregel_ns_writes|app.node|node", Key: fmt.Sprintf("%s%032x", prefix, i)},
			Value: make([]byte, size),
			TTL:   time.Hour,
		}
	}
	return entries
}

// BenchmarkPGGetHit looks up cached keys in one query, as the engine does
// once per superstep; each hit is authenticated.
func BenchmarkPGGetHit(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := benchCache(b)
			entries := benchEntries(n, 256, "")
			keys := make([]cache.Key, n)
			for i, e := range entries {
				keys[i] = e.Key
			}
			if err := c.Set(ctx, entries); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				got, err := c.Get(ctx, keys)
				if err != nil || len(got) != n {
					b.Fatalf("Get = %d hits, %v; want %d", len(got), err, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}

// BenchmarkPGSet stores node results in one upsert, as the engine does
// after a step's cached tasks finish. Keys alternate between two sets so
// half the rows of a run are inserts and half replace earlier rows.
func BenchmarkPGSet(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := benchCache(b)
			batches := [][]cache.Entry{benchEntries(n, 256, "a"), benchEntries(n, 256, "b")}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := c.Set(ctx, batches[i%2]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
		})
	}
}

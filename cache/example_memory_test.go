package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/cache"
)

func ExampleMemory() {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := cache.NewMemory(&cache.MemoryOptions{Now: func() time.Time { return now }})
	defer m.Close()

	k := cache.Key{Namespace: "__pregel_ns_writes|app.summarize|summarize", Key: "9f2c…"}
	_ = m.Set(ctx, []cache.Entry{{Key: k, Value: []byte(`[["summary","…"]]`), TTL: time.Minute}})

	hit, _ := m.Get(ctx, []cache.Key{k})
	fmt.Printf("hit: %s\n", hit[k])

	now = now.Add(time.Minute) // the TTL has run out
	hit, _ = m.Get(ctx, []cache.Key{k})
	fmt.Println("entries after a minute:", len(hit))
	// Output:
	// hit: [["summary","…"]]
	// entries after a minute: 0
}

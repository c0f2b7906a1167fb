package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/cache/cachetest"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	cachetest.Exercise(t, func(t *testing.T, clock *cachetest.FakeClock) cachetest.Cache {
		m := cache.NewMemory(&cache.MemoryOptions{Now: clock.Now})
		t.Cleanup(func() { _ = m.Close() })
		return m
	})
}

// TestMemoryBackgroundSweeper checks that the interval sweeper removes
// expired entries by itself and stops on Close.
func TestMemoryBackgroundSweeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := cachetest.NewFakeClock(cachetest.Start)
	swept := make(chan int, 1)
	m := cache.NewMemory(&cache.MemoryOptions{
		Now:           clock.Now,
		SweepInterval: time.Millisecond,
		OnSweep: func(n int) {
			if n > 0 {
				swept <- n
			}
		},
	})
	k := cache.Key{Namespace: "ns", Key: "k"}
	if err := m.Set(ctx, []cache.Entry{{Key: k, Value: []byte("v"), TTL: time.Minute}, {Key: cache.Key{Namespace: "ns", Key: "kept"}, Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	select {
	case n := <-swept:
		if n != 1 {
			t.Errorf("the sweeper removed %d entries; want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the background sweeper did not remove the expired entry within 10s")
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	// With the clock turned back, a removed entry stays gone; the other
	// entry was left alone, and the cache still works after Close.
	clock.Set(cachetest.Start)
	got, err := m.Get(ctx, []cache.Key{k, {Namespace: "ns", Key: "kept"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[k]; ok || len(got) != 1 {
		t.Errorf("after the sweep Get = %v; want only ns/kept", got)
	}
}

func TestMemoryCloseWithoutSweeper(t *testing.T) {
	t.Parallel()
	m := cache.NewMemory(nil)
	if err := m.Close(); err != nil {
		t.Fatalf("Close of a cache without a sweeper: %v", err)
	}
}

package cachedlookup_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cachedlookup"
	"github.com/superstep-dev/superstep/internal/testclock"
)

type clock = testclock.Clock

// countingRates counts provider calls: the cost the cache saves.
type countingRates struct {
	calls atomic.Int32
	inner cachedlookup.RateSource
}

func (r *countingRates) Rate(ctx context.Context, pair string) (float64, error) {
	r.calls.Add(1)
	return r.inner.Rate(ctx, pair)
}

type setup struct {
	clock *clock
	rates *countingRates
	graph *engine.Graph[cachedlookup.State]
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	s := &setup{
		clock: testclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)),
		rates: &countingRates{inner: cachedlookup.DefaultRates},
	}
	var err error
	s.graph, err = cachedlookup.New(cachedlookup.Options{
		Rates: s.rates,
		Now:   s.clock.Now,
		// The cache expires entries on the same clock, so the TTL is
		// tested without sleeping.
		Cache: cache.NewMemory(&cache.MemoryOptions{Now: s.clock.Now}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lookupRun is what a run shows about its lookup node.
type lookupRun struct {
	out     cachedlookup.State
	started bool // the node ran
	cached  bool // TaskFinished.Cached
}

func (s *setup) quote(t *testing.T, pair string, amount float64) lookupRun {
	t.Helper()
	var mu sync.Mutex
	var r lookupRun
	listen := func(e engine.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch x := e.(type) {
		case engine.TaskStarted:
			if x.Task.Name == cachedlookup.NodeLookupRate {
				r.started = true
			}
		case engine.TaskFinished:
			if x.Task.Name == cachedlookup.NodeLookupRate {
				r.cached = x.Cached
			}
		}
	}
	out, err := s.graph.Invoke(context.Background(), cachedlookup.Input(pair, amount), &engine.RunOptions{Listener: listen})
	if err != nil {
		t.Fatalf("quote %s %v: %v", pair, amount, err)
	}
	mu.Lock()
	defer mu.Unlock()
	r.out = out
	return r
}

func TestRepeatedInputHitsTheCache(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	t0 := s.clock.Now()

	first := s.quote(t, "EUR/USD", 100)
	if !first.started || first.cached {
		t.Fatalf("first quote: started=%v cached=%v, want a real lookup", first.started, first.cached)
	}
	if !first.out.FetchedAt.Equal(t0) || first.out.Converted != 108.42 {
		t.Fatalf("first quote = %+v", first.out)
	}

	s.clock.Advance(10 * time.Second)
	second := s.quote(t, "EUR/USD", 250) // another amount: same lookup input
	if second.started || !second.cached {
		t.Fatalf("second quote: started=%v cached=%v, want a cache hit", second.started, second.cached)
	}
	if !second.out.FetchedAt.Equal(t0) {
		t.Fatalf("cached quote fetched at %v, want the first lookup's time %v", second.out.FetchedAt, t0)
	}
	if second.out.Rate != first.out.Rate || second.out.Converted != 271.05 {
		t.Fatalf("cached quote = %+v", second.out)
	}

	other := s.quote(t, "GBP/USD", 100)
	if !other.started || other.cached {
		t.Fatalf("other pair: started=%v cached=%v, want a real lookup", other.started, other.cached)
	}
	if !other.out.FetchedAt.Equal(t0.Add(10*time.Second)) || other.out.Rate != 1.2675 {
		t.Fatalf("other pair quote = %+v", other.out)
	}

	if n := s.rates.calls.Load(); n != 2 {
		t.Fatalf("provider called %d times for EUR, EUR, GBP; want 2", n)
	}
}

func TestEntryExpiresAfterTTL(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.quote(t, "USD/JPY", 1)

	s.clock.Advance(cachedlookup.RateTTL - time.Second)
	if r := s.quote(t, "USD/JPY", 1); !r.cached {
		t.Fatal("a second before the TTL the lookup missed the cache")
	}

	s.clock.Advance(2 * time.Second)
	r := s.quote(t, "USD/JPY", 1)
	if r.cached || !r.started {
		t.Fatalf("after the TTL: started=%v cached=%v, want a fresh lookup", r.started, r.cached)
	}
	if !r.out.FetchedAt.Equal(s.clock.Now()) {
		t.Fatalf("fresh lookup fetched at %v, want now %v", r.out.FetchedAt, s.clock.Now())
	}
}

// A failed lookup leaves nothing in the cache: the next quote asks the
// provider again and fails again, clearly.
func TestFailuresAreNotCached(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	for i := range 2 {
		_, err := s.graph.Invoke(context.Background(), cachedlookup.Input("EUR/XXX", 1), nil)
		if !errors.Is(err, cachedlookup.ErrUnknownPair) {
			t.Fatalf("attempt %d: error %v, want ErrUnknownPair", i, err)
		}
	}
	if n := s.rates.calls.Load(); n != 2 {
		t.Fatalf("provider called %d times for two failing quotes, want 2", n)
	}
}

// With a checkpointer the cached time round-trips through JSON.
func TestCheckpointedCachedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := testclock.New(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	g, err := cachedlookup.New(cachedlookup.Options{Now: clk.Now, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	for i, thread := range []string{"a", "b"} {
		clk.Advance(time.Second)
		out, err := g.Invoke(ctx, cachedlookup.Input("EUR/USD", 10), &engine.RunOptions{ThreadID: thread})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if want := time.Date(2025, 3, 14, 9, 0, 1, 0, time.UTC); !out.FetchedAt.Equal(want) {
			t.Fatalf("run %d fetched at %v, want %v (the second run is a cache hit)", i, out.FetchedAt, want)
		}
	}
}

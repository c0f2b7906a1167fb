package cachedlookup

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

// RateTTL is how long a looked-up rate is reused: the provider updates
// its rates about once a minute, and a quote may be half a minute stale.
const RateTTL = 30 * time.Second

// ErrUnknownPair is returned for a currency pair the rate source does not
// quote.
var ErrUnknownPair = errors.New("unknown currency pair")

// State is a price quote.
type State struct {
	// Pair and Amount are the input, e.g. "EUR/USD" and 120.
	Pair   string  `json:"pair"`
	Amount float64 `json:"amount"`
	// Rate and FetchedAt come from the (cached) lookup: FetchedAt is when
	// the lookup node actually ran, so a cached rate keeps its old time.
	Rate      float64   `json:"rate"`
	FetchedAt time.Time `json:"fetched_at"`
	// Converted is Amount × Rate, in cents precision.
	Converted float64 `json:"converted"`
}

// RateSource is the slow, metered provider: a market-data API in
// production, FixtureRates here.
type RateSource interface {
	Rate(ctx context.Context, pair string) (float64, error)
}

// FixtureRates is a RateSource over a fixed table, for tests and the
// Studio.
type FixtureRates map[string]float64

// DefaultRates are the rates New uses when Options.Rates is nil.
var DefaultRates = FixtureRates{"EUR/USD": 1.0842, "GBP/USD": 1.2675, "USD/JPY": 151.37}

// Rate implements RateSource.
func (f FixtureRates) Rate(_ context.Context, pair string) (float64, error) {
	r, ok := f[pair]
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknownPair, pair)
	}
	return r, nil
}

// Options configure the graph.
type Options struct {
	// Rates is the provider; nil means DefaultRates.
	Rates RateSource
	// Now stamps each lookup; nil means time.Now. Tests inject a clock so
	// a cached result is recognisable by its old time.
	Now func() time.Time
	// Cache holds the lookup results; nil means a new cache.NewMemory(nil)
	// of this graph's own (the example is about caching, so it never runs
	// without one).
	Cache cache.Cache
	// Checkpointer and Store are passed to Compile.
	Checkpointer checkpoints.Saver
	Store        store.Store
}

// Node names.
const (
	NodeLookupRate = "lookup_rate"
	NodeQuote      = "quote"
)

// Input is the run input that quotes amount in pair.
func Input(pair string, amount float64) engine.Update {
	return engine.Update{"pair": pair, "amount": amount}
}

// rateQuery is all the lookup node reads. The cache key is computed from a
// node's input, so keeping the amount out of it lets quotes for any amount
// share one cached rate; a node taking the whole State would miss the
// cache whenever the amount changed.
type rateQuery struct {
	Pair string `json:"pair"`
}

// New builds the quote graph: lookup_rate (cached for RateTTL) then quote.
func New(opts Options) (*engine.Graph[State], error) {
	rates := opts.Rates
	if rates == nil {
		rates = DefaultRates
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	c := opts.Cache
	if c == nil {
		c = cache.NewMemory(nil)
	}
	g := engine.NewStateGraph[State]()
	engine.AddNodeFunc(g, NodeLookupRate, func(ctx context.Context, q rateQuery) (engine.Output, error) {
		if q.Pair == "" {
			return nil, engine.Permanent(fmt.Errorf("%w: pair is empty (want e.g. \"EUR/USD\")", ErrUnknownPair))
		}
		r, err := rates.Rate(ctx, q.Pair)
		if err != nil {
			return nil, fmt.Errorf("lookup rate: %w", err)
		}
		return engine.Update{"rate": r, "fetched_at": now()}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: RateTTL}))
	g.AddNode(NodeQuote, func(_ context.Context, s State) (engine.Output, error) {
		return engine.Update{"converted": math.Round(s.Amount*s.Rate*100) / 100}, nil
	})
	g.AddEdge(engine.Start, NodeLookupRate)
	g.AddEdge(NodeLookupRate, NodeQuote)
	g.AddEdge(NodeQuote, engine.End)
	return g.Compile(engine.CompileOptions{Name: "cachedlookup", Checkpointer: opts.Checkpointer, Cache: c, Store: opts.Store})
}

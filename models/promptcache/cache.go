package promptcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/store"
)

// TTL is a cache entry's lifetime as Anthropic's cache_control spells it.
type TTL string

// The two TTLs Anthropic offers.
const (
	TTL5m TTL = "5m"
	TTL1h TTL = "1h"
)

// Duration is the TTL as a time.Duration.
func (t TTL) Duration() time.Duration {
	if t == TTL1h {
		return time.Hour
	}
	return 5 * time.Minute
}

// Default thresholds of break detection (§6.3).
const (
	// DefaultMinDropTokens: a drop in cache reads smaller than this is
	// noise, not a break.
	DefaultMinDropTokens = 1024
	// BreakDropRatio: a drop of more than this share of the previous
	// call's reads is a break.
	BreakDropRatio = 0.05
	// Lookback is how many blocks back a marker looks for an entry.
	Lookback = 20
	// bridgeAfter is how many blocks past the last written position a
	// bridging second message marker goes (R2: ~18, inside the 20-block
	// lookback).
	bridgeAfter = 18
)

// ErrNoReason is returned by System for a DangerousUncachedSection
// without a reason: every input that busts the cache must say why.
var ErrNoReason = errors.New("promptcache: a DangerousUncachedSection needs a reason")

// Config configures a Cache. The zero value works: an in-memory store,
// 5-minute entries, no prices (every call unpriced) and Anthropic's published
// minimum lengths.
type Config struct {
	// Store keeps each thread's latches and per-call records under the
	// namespace ("promptcache", <thread>); pass the graph's store
	// (store/pgstore on Postgres) so they survive a restart. Nil is an
	// in-memory store of this Cache's own.
	Store store.Store
	// Checkpoints, when set, is the graph's checkpointer: a call's
	// previous call is then looked for on its checkpoint's ancestors, so a
	// fork (time travel, an edited state) compares with the call on its
	// own branch. Without it the previous call is the latest of the same
	// thread, graph path and node.
	Checkpoints checkpoints.Saver
	// TTL chooses a thread's TTL for the static prefix (tools and system)
	// on its first call; the choice is latched (persisted with the
	// thread) until Reset. Nil is TTL5m. Message markers are always 5m
	// entries, after any 1h ones, as the API requires.
	TTL func(ctx context.Context, thread string) TTL
	// Prices prices calls by model name (the longest key that prefixes
	// the model wins). A call of a model without a price is recorded as
	// unpriced (Record.Unpriced: its cost is unknown), not as free.
	Prices map[string]Price
	// MinTokens is the minimum cacheable prefix by model name prefix;
	// nil is DefaultMinTokens.
	MinTokens map[string]int
	// MinDropTokens is the smallest drop in cache reads reported as a
	// break; 0 is DefaultMinDropTokens.
	MinDropTokens int
	// OpenAIIdle is how long an OpenAI prefix stays cached without use
	// (ttl_expired is suspected past it); 0 is 5 minutes.
	OpenAIIdle time.Duration
	// NoBridge leaves out R2's bridging marker: a second message marker
	// placed 18 blocks after the previous call's last written one when a
	// turn adds more blocks than a marker's 20-block lookback reaches.
	// Without it such a turn misses the cache (a break suspected as
	// lookback_exceeded); with it, it costs one of the four slots.
	NoBridge bool
	// Now is the clock (TTL expiry is judged by it); nil is time.Now.
	Now func() time.Time
	// OnError receives errors the hooks cannot return (saving a record
	// after the call); the library never logs.
	OnError func(error)
}

// DefaultMinTokens is the minimum cacheable prefix per Anthropic model
// family (reference §1.2, as published; marked unverified there for some
// models), and OpenAI's 1024. Keys are model name prefixes.
var DefaultMinTokens = map[string]int{
	"":                  1024,
	"claude-opus-4-7":   2048,
	"claude-opus-4-6":   4096,
	"claude-opus-4-5":   4096,
	"claude-haiku-4-5":  4096,
	"claude-3-5-haiku":  2048,
	"claude-haiku-3-5":  2048,
	"claude-sonnet-4-5": 1024,
	"claude-sonnet-4":   1024,
	"claude-opus-4":     1024,
}

// Cache is the prompt-cache layer for the chat models it is installed on
// (through Hooks): it places Anthropic's cache markers, keeps each
// thread's requests byte-stable, detects cache breaks and records every
// call. It is safe for concurrent use; one Cache serves every thread.
type Cache struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	threads map[string]*threadState
	calls   map[*models.Request]*call
	fans    map[string]*fanGroup
	// onWait, in tests, runs when a call starts waiting for its leader.
	onWait func()
}

// New returns a Cache configured by cfg.
func New(cfg Config) (*Cache, error) {
	if cfg.Store == nil {
		s, err := store.NewMemory(store.Options{})
		if err != nil {
			return nil, fmt.Errorf("promptcache: memory store: %w", err)
		}
		cfg.Store = s
	}
	if cfg.MinTokens == nil {
		cfg.MinTokens = DefaultMinTokens
	}
	if cfg.MinDropTokens <= 0 {
		cfg.MinDropTokens = DefaultMinDropTokens
	}
	if cfg.OpenAIIdle <= 0 {
		cfg.OpenAIIdle = 5 * time.Minute
	}
	c := &Cache{cfg: cfg, now: cfg.Now, threads: map[string]*threadState{}, calls: map[*models.Request]*call{}, fans: map[string]*fanGroup{}}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Hooks are the hooks to install on a provider's Config (anthropic.Config
// or openai.Config .Hooks). Requests of other providers pass unchanged.
func (c *Cache) Hooks() models.Hooks {
	return models.Hooks{BeforeCall: c.beforeCall, FirstByte: c.firstByte, AfterCall: c.afterCall}
}

// Reset clears a thread's latches, memoised system sections, pinned tool
// schemas and break-detection baseline: the explicit clear/compact after
// which the thread's prefix may change once without being a break.
// Records are kept.
func (c *Cache) Reset(ctx context.Context, thread string) error {
	ts, err := c.thread(ctx, thread)
	if err != nil {
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.latches = latches{Generation: ts.latches.Generation + 1}
	ts.tools = nil
	ts.safe = nil
	return c.saveLatches(ctx, ts)
}

func (c *Cache) reportError(err error) {
	if err != nil && c.cfg.OnError != nil {
		c.cfg.OnError(err)
	}
}

// minTokens is the minimum cacheable prefix of model.
func (c *Cache) minTokens(model string) int {
	return longestPrefix(c.cfg.MinTokens, model)
}

// price is model's price from Config.Prices; false when none matches.
func (c *Cache) price(model string) (Price, bool) {
	return longestPrefixOK(c.cfg.Prices, model)
}

func longestPrefix[V any](m map[string]V, key string) V {
	v, _ := longestPrefixOK(m, key)
	return v
}

// longestPrefixOK is the value of the longest key of m that prefixes
// key, and whether there is one.
func longestPrefixOK[V any](m map[string]V, key string) (V, bool) {
	var best V
	n := -1
	for k, v := range m {
		if len(k) > n && strings.HasPrefix(key, k) {
			best, n = v, len(k)
		}
	}
	return best, n >= 0
}

package localprovider

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"sync"
	"time"
)

// Cache lifetimes.
const (
	ttl5m = 5 * time.Minute
	ttl1h = time.Hour
	// openAIIdle is how long an OpenAI in_memory entry lives unused (the
	// API says 5–10 minutes; the double takes the short end), and
	// openAIMaxAge the most it lives however often it is read.
	openAIIdle   = 5 * time.Minute
	openAIMaxAge = time.Hour
	openAI24h    = 24 * time.Hour
	// openAIStep is the granularity of OpenAI's cache hits.
	openAIStep = 128
	// lookback is how many blocks before a marker Anthropic checks for an
	// earlier entry.
	lookback = 20
)

// DefaultCacheMinTokens is the minimum cacheable prefix per model id
// prefix (reference §1.2; the model with the longest matching prefix
// wins, "" is every other model, OpenAI's included). A prefix shorter than
// its model's minimum is not cached, with no error. Config.CacheMinTokens
// overrides and extends it.
func DefaultCacheMinTokens() map[string]int {
	return map[string]int{
		"":                      1024,
		"claude-opus-5":         512,
		"claude-fable-5":        512,
		"claude-mythos-5":       512,
		"claude-opus-4-8":       1024,
		"claude-sonnet-5":       1024,
		"claude-sonnet-4-6":     1024,
		"claude-sonnet-4-5":     1024,
		"claude-opus-4-1":       1024,
		"claude-opus-4":         1024,
		"claude-sonnet-4":       1024,
		"claude-opus-4-7":       2048,
		"claude-mythos-preview": 2048,
		"claude-3-5-haiku":      2048,
		"claude-opus-4-6":       4096,
		"claude-opus-4-5":       4096,
		"claude-haiku-4-5":      4096,
	}
}

// minTokens is the minimum cacheable prefix of a model.
func (s *Server) minTokens(model string) int {
	best, n := -1, 0
	for prefix, v := range s.minTable {
		if strings.HasPrefix(model, prefix) && len(prefix) > best {
			best, n = len(prefix), v
		}
	}
	return n
}

// promptCache holds the live entries of every key, model and route.
type promptCache struct {
	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
	// sweepAt is the size at which commit drops expired entries, so a
	// long-lived double does not grow without bound.
	sweepAt int
}

// cacheKey names an entry: the API key's fingerprint (caches never cross
// keys), OpenAI's routing key, and the prefix hash (which covers the API
// and the model).
type cacheKey struct {
	owner, route string
	sum          [sha256.Size]byte
}

// cacheEntry is one cached prefix.
type cacheEntry struct {
	expires time.Time
	ttl     time.Duration // how far a read or rewrite pushes expires
	limit   time.Time     // an in_memory entry's end however often it is read; zero: none
}

// cachePlan is what a request does to the cache once its response starts.
type cachePlan struct {
	// writes are new or refreshed entries, hits included.
	writes []cacheWrite
}

// cacheWrite writes or refreshes one entry.
type cacheWrite struct {
	sum [sha256.Size]byte
	ttl time.Duration
	// maxAge, when set, bounds a new entry's life (OpenAI in_memory).
	maxAge time.Duration
}

func newPromptCache() *promptCache {
	return &promptCache{entries: map[cacheKey]cacheEntry{}, sweepAt: 1024}
}

// prefixSums is k(i) for each block: a hash of the API, the model and
// the canonical bytes of blocks[0..i], chained block by block (each hash
// covers the previous one and the block, length-prefixed) so a request
// of n blocks costs O(n) to key. cache_control is not in the bytes.
func prefixSums(p prompt) [][sha256.Size]byte {
	sums := make([][sha256.Size]byte, len(p.blocks))
	prev := sha256.Sum256([]byte(string(p.api) + "\x00" + p.model))
	h := sha256.New()
	var n [8]byte
	for i, b := range p.blocks {
		h.Reset()
		h.Write(prev[:])
		for _, part := range [][]byte{[]byte(b.kind), []byte(b.role), b.bytes} {
			binary.BigEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
		h.Sum(sums[i][:0])
		prev = sums[i]
	}
	return sums
}

// live reports whether an entry is readable at t. Entries are stored only
// once their writer's response has started, so a stored entry is visible.
// The caller holds c.mu.
func (c *promptCache) live(k cacheKey, t time.Time) bool {
	e, ok := c.entries[k]
	return ok && t.Before(e.expires)
}

// ttlOf is a marker's lifetime.
func ttlOf(m *CacheControl) time.Duration {
	if m.TTL == "1h" {
		return ttl1h
	}
	return ttl5m
}

// markers is the block index of every cache_control marker in prefix
// order, with the top-level automatic marker placed on the last eligible
// block (walking back past thinking blocks and tiers).
func markers(p prompt) ([]int, []*CacheControl) {
	var at []int
	var cc []*CacheControl
	auto := -1
	if p.marker != nil {
		for i := len(p.blocks) - 1; i >= 0; i-- {
			if p.blocks[i].eligible {
				auto = i
				break
			}
		}
	}
	for i, b := range p.blocks {
		switch {
		case b.marker != nil:
			at, cc = append(at, i), append(cc, b.marker)
		case i == auto:
			at, cc = append(at, i), append(cc, p.marker)
		}
	}
	return at, cc
}

// planAnthropic looks a Messages prompt up and plans its writes
// (reference §6.4). For each marker b it scans k(b) … k(b−20) for a live
// entry, counting content blocks only (a tier pseudo-block is passed
// without counting); the hit is the largest index found. Every marker whose prefix
// reaches the model's minimum writes (or refreshes) its entry, and the
// hit's entry is refreshed. read = tokens(0..hit), creation =
// tokens(hit..last written marker) split by the TTL of the marker ending
// each stretch, input = the rest.
func (c *promptCache) planAnthropic(p prompt, cum []int, minTokens int) Usage {
	total := 0
	if len(cum) > 0 {
		total = cum[len(cum)-1]
	}
	at, cc := markers(p)
	if len(at) == 0 {
		return Usage{InputTokens: total}
	}
	sums := prefixSums(p)
	c.mu.Lock()
	hit := -1
	for _, b := range at {
		// The lookback counts content blocks, as the API does: the tier
		// pseudo-blocks are the double's own and are stepped over
		// without counting (their prefixes are still tried).
		steps := 0
		for i := b; i >= 0 && steps <= lookback; i-- {
			if c.live(cacheKey{owner: p.key, sum: sums[i]}, p.start) {
				hit = max(hit, i)
				break
			}
			if p.blocks[i].kind != "tier" {
				steps++
			}
		}
	}
	var hitTTL time.Duration
	if hit >= 0 {
		hitTTL = c.entries[cacheKey{owner: p.key, sum: sums[hit]}].ttl
	}
	c.mu.Unlock()

	u := Usage{}
	if hit >= 0 {
		u.CacheReadInputTokens = cum[hit]
		p.plan.writes = append(p.plan.writes, cacheWrite{sum: sums[hit], ttl: hitTTL})
	}
	covered := hit // the prefix already read or written
	for j, b := range at {
		if cum[b] < minTokens {
			continue
		}
		ttl := ttlOf(cc[j])
		p.plan.writes = append(p.plan.writes, cacheWrite{sum: sums[b], ttl: ttl})
		if b <= covered {
			continue
		}
		from := 0
		if covered >= 0 {
			from = cum[covered]
		}
		if ttl == ttl1h {
			u.Ephemeral1hInputTokens += cum[b] - from
		} else {
			u.Ephemeral5mInputTokens += cum[b] - from
		}
		covered = b
	}
	u.CacheCreationInputTokens = u.Ephemeral5mInputTokens + u.Ephemeral1hInputTokens
	u.InputTokens = total - u.CacheReadInputTokens - u.CacheCreationInputTokens
	return u
}

// planOpenAI looks a Chat Completions prompt up in OpenAI's implicit mode:
// among the entries of the request's prompt_cache_key, the longest cached
// prefix (at block boundaries) of at least the minimum is read, floored to
// 128 tokens; every prefix of at least the minimum is written. Writes are
// free and not reported.
func (c *promptCache) planOpenAI(p prompt, cum []int, minTokens int) Usage {
	total := 0
	if len(cum) > 0 {
		total = cum[len(cum)-1]
	}
	sums := prefixSums(p)
	ttl, maxAge := openAIIdle, openAIMaxAge
	if p.retention == "24h" {
		ttl, maxAge = openAI24h, 0
	}
	c.mu.Lock()
	hit := -1
	for i := len(sums) - 1; i >= 0 && cum[i] >= minTokens; i-- {
		if c.live(cacheKey{owner: p.key, route: p.route, sum: sums[i]}, p.start) {
			hit = i
			break
		}
	}
	c.mu.Unlock()
	for i := range sums {
		if cum[i] >= minTokens {
			p.plan.writes = append(p.plan.writes, cacheWrite{sum: sums[i], ttl: ttl, maxAge: maxAge})
		}
	}
	u := Usage{InputTokens: total}
	if hit >= 0 {
		u.CacheReadInputTokens = cum[hit] / openAIStep * openAIStep
		u.InputTokens -= u.CacheReadInputTokens
	}
	return u
}

// commit carries out a request's plan: each write stores or refreshes its
// entry to expire a TTL after the request started (never earlier than it
// already did, never past an in_memory entry's limit).
func (c *promptCache) commit(p prompt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range p.plan.writes {
		k := cacheKey{owner: p.key, route: p.route, sum: w.sum}
		e, ok := c.entries[k]
		if !ok || !p.start.Before(e.expires) {
			e = cacheEntry{ttl: w.ttl}
			if w.maxAge > 0 {
				e.limit = p.start.Add(w.maxAge)
			}
		}
		e.ttl = max(e.ttl, w.ttl)
		exp := p.start.Add(w.ttl)
		if !e.limit.IsZero() && exp.After(e.limit) {
			exp = e.limit
		}
		if exp.After(e.expires) {
			e.expires = exp
		}
		c.entries[k] = e
	}
	if len(c.entries) >= c.sweepAt {
		for k, e := range c.entries {
			if !p.start.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		c.sweepAt = max(1024, 2*len(c.entries))
	}
}

package promptcache

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/superstep-dev/superstep/store"
)

// Record is what the layer knows about one model call (§6.3): where it
// ran, the hashes of everything that can break the cache, where the
// markers went, the usage, hit ratio and cost, and the break verdict. One
// is kept with the thread per call (Records reads them) and emitted as the
// call's custom event (engine.Emit) so the Studio shows it live.
type Record struct {
	CallID       string `json:"call_id"`
	ThreadID     string `json:"thread_id"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	CheckpointNS string `json:"checkpoint_ns"`
	Step         int    `json:"step"`
	Node         string `json:"node"`
	TaskID       string `json:"task_id,omitempty"`
	// Lineage is "main", or "fork:<kind>": "branch" (time travel: the
	// previous call is on an ancestor branch, not the latest of its
	// lineage), "send" (a Send child) or "skip_write" (a fire-and-forget
	// fork, R3); or "subgraph:shared" (a subgraph node sent with its
	// parent graph's system and tools, ShareParentPrefix: compared with
	// the parent's call unless its own previous call is later).
	Lineage string `json:"lineage"`
	// LineageKey is the graph path and node the call belongs to
	// ("outer|inner|agent"); calls of one key are compared.
	LineageKey string `json:"lineage_key"`
	// PrevCallID is the call this one was compared with ("" for none).
	PrevCallID string    `json:"prev_call_id,omitempty"`
	Generation int       `json:"generation"`
	Provider   string    `json:"provider"`
	Model      string    `json:"model"`
	RequestID  string    `json:"request_id,omitempty"`
	Attempt    int       `json:"attempt"`
	StartedAt  time.Time `json:"started_at"`
	TTFTMs     int64     `json:"ttft_ms"`
	DurationMs int64     `json:"duration_ms"`
	Hashes     Hashes    `json:"hashes"`
	Markers    []Marker  `json:"markers"`
	// BlockCount is the request's block count (tools, system blocks,
	// message content blocks); BlocksSinceLastWrite the message blocks
	// after the previous call's last written marker.
	BlockCount           int `json:"block_count"`
	BlocksSinceLastWrite int `json:"blocks_since_last_write"`
	// PinnedTools names tools whose definition changed but was sent as
	// first pinned (R6).
	PinnedTools []string `json:"pinned_tools,omitempty"`
	// Pending are the dimensions that changed since the previous call,
	// break or not.
	Pending []Dimension `json:"pending,omitempty"`
	Usage   Usage       `json:"usage"`
	// HitRatio is cache reads over the whole prompt.
	HitRatio        float64 `json:"hit_ratio"`
	CostUSD         float64 `json:"cost_usd"`
	CostUSDUncached float64 `json:"cost_usd_uncached"`
	// Unpriced: Config.Prices has no price for the model, so the cost is
	// unknown (CostUSD and CostUSDUncached are 0 and mean nothing).
	Unpriced   bool   `json:"unpriced,omitempty"`
	Break      Break  `json:"break"`
	StopReason string `json:"stop_reason,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Marker is one cache_control marker the layer placed.
type Marker struct {
	// At is its position as the request writes it: "tools[4]",
	// "system[0]", "messages[11].content[0]".
	At  string `json:"at"`
	TTL TTL    `json:"ttl"`
	// MessageBlock is the index of the marked block among the request's
	// message content blocks (-1 for tools and system).
	MessageBlock int `json:"message_block"`
	// Block is the index of the marked block among the request's content
	// blocks — tools, system blocks, message blocks — as the provider's
	// 20-block lookback counts them.
	Block int `json:"block"`
	// Auto marks the caller's top-level automatic marker, recorded where
	// the provider places it (the last block that may carry a marker).
	Auto bool `json:"auto,omitempty"`
}

// Usage is a call's token usage in the cache's terms: Input is the
// uncached part of the prompt.
type Usage struct {
	Input        int  `json:"input"`
	CacheRead    int  `json:"cache_read"`
	CacheWrite5m int  `json:"cache_write_5m"`
	CacheWrite1h int  `json:"cache_write_1h"`
	Output       int  `json:"output"`
	Reasoning    *int `json:"reasoning"`
}

// Prompt is the whole prompt: input, reads and writes.
func (u Usage) Prompt() int { return u.Input + u.CacheRead + u.CacheWrite5m + u.CacheWrite1h }

// Break is the verdict of break detection on one call.
type Break struct {
	Detected bool `json:"detected"`
	// ReadDropPct is the drop in cache reads against the previous call,
	// in percent (0 when they did not drop).
	ReadDropPct float64 `json:"read_drop_pct"`
	// ChangedDimensions are the dimensions that changed, when a break was
	// detected; ChangedTools and ChangedSystemBlocks say which tools and
	// system blocks.
	ChangedDimensions   []Dimension `json:"changed_dimensions"`
	ChangedTools        []string    `json:"changed_tools,omitempty"`
	ChangedSystemBlocks []int       `json:"changed_system_blocks,omitempty"`
	// Suspected is the likely cause of a break where no dimension
	// changed; or baseline_unknown (with Detected false) when the call's
	// previous call could not be found, so no break was judged; null
	// otherwise.
	Suspected *Suspect `json:"suspected"`
	// Reason says in words why the baseline is unknown.
	Reason string `json:"reason,omitempty"`
}

// Suspect is the suspected cause of a break no dimension explains.
type Suspect string

// The suspected causes.
const (
	SuspectTTLExpired        Suspect = "ttl_expired"
	SuspectLookbackExceeded  Suspect = "lookback_exceeded"
	SuspectBelowMinimum      Suspect = "below_minimum"
	SuspectConcurrentSibling Suspect = "concurrent_sibling"
	SuspectUnknown           Suspect = "unknown"
	// SuspectBaselineUnknown is no break: the call's previous call on its
	// branch could not be found (its checkpoint history could not be
	// read), so the call was not judged.
	SuspectBaselineUnknown Suspect = "baseline_unknown"
)

// Price is a model's price in USD per million tokens.
type Price struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
}

// AnthropicPrice is a price with Anthropic's cache multipliers on the
// input price (§1.4): reads 0.1×, 5m writes 1.25×, 1h writes 2×.
func AnthropicPrice(input, output float64) Price {
	return Price{Input: input, Output: output, CacheRead: input * 0.1, CacheWrite5m: input * 1.25, CacheWrite1h: input * 2}
}

// OpenAIPrice is a price for OpenAI's implicit caching: reads at
// readRatio of the input price, writes free (priced as input) before
// GPT-5.6. Pass writeRatio 1.25 for GPT-5.6 and later.
func OpenAIPrice(input, output, readRatio, writeRatio float64) Price {
	return Price{Input: input, Output: output, CacheRead: input * readRatio, CacheWrite5m: input * writeRatio, CacheWrite1h: input * writeRatio}
}

// cost is the call's cost with and without caching.
func (p Price) cost(u Usage) (cached, uncached float64) {
	out := float64(u.Output) * p.Output
	cached = float64(u.Input)*p.Input + float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite5m)*p.CacheWrite5m + float64(u.CacheWrite1h)*p.CacheWrite1h + out
	uncached = float64(u.Prompt())*p.Input + out
	return cached / 1e6, uncached / 1e6
}

// Records returns a thread's call records, oldest first, as stored (the
// Studio's prompt-cache panel reads them after a restart).
func (c *Cache) Records(ctx context.Context, thread string) ([]Record, error) {
	recs, err := c.readRecords(ctx, thread)
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = *r
	}
	return out, nil
}

func (c *Cache) readRecords(ctx context.Context, thread string) ([]*Record, error) {
	var out []*Record
	for offset := 0; ; offset += store.MaxLimit {
		items, err := store.Search(ctx, c.cfg.Store, store.SearchOp{NamespacePrefix: recordsNS(thread), Limit: store.MaxLimit, Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("promptcache: reading the records of thread %q: %w", thread, err)
		}
		for _, it := range items {
			var r Record
			if err := fromMap(it.Value, &r); err != nil {
				return nil, fmt.Errorf("promptcache: record %s of thread %q: %w", it.Key, thread, err)
			}
			out = append(out, &r)
		}
		if len(items) < store.MaxLimit {
			break
		}
	}
	slices.SortStableFunc(out, recordOrder)
	return out, nil
}

// recordOrder is the one order of a thread's records, in the store and in
// memory: by start time, then call id (uuid v7, time-ordered), so calls
// that started together sort the same way in every process.
func recordOrder(a, b *Record) int {
	if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
		return c
	}
	return compareStrings(a.CallID, b.CallID)
}

func (c *Cache) saveRecord(ctx context.Context, r *Record) error {
	if r.ThreadID == "" {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	_, err = store.Do(ctx, c.cfg.Store, store.PutOp{Namespace: recordsNS(r.ThreadID), Key: r.CallID, Value: v, Index: store.NoIndex, TTL: store.NoTTL})
	if err != nil {
		return fmt.Errorf("promptcache: saving record %s of thread %q: %w", r.CallID, r.ThreadID, err)
	}
	return nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package runs

import (
	"slices"
	"time"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models/promptcache"
)

// KindPromptCache reports one model call's prompt-cache record
// (models/promptcache): a node's custom event whose payload is a
// promptcache.Record, of the thread's graph or of a subgraph (then with
// its Path). The event carries a summary of the record (ModelCall), never
// its hashes; the record itself is kept with the thread by the layer
// (promptcache.Cache.Records), and pages render it from there, so a
// reload shows what a live tab shows. Like every published event it
// takes a seq and is retained for cursors; a catch-up from checkpoints
// rebuilds none (the stored records stand for them).
const KindPromptCache Kind = "prompt_cache"

// ModelCall summarises a promptcache.Record on a prompt_cache event: the
// call's id, provider and model, usage (Input is the uncached part of
// the prompt), hit ratio, cost and saving in USD (or unpriced), and the
// break verdict: the dimensions that changed, or the suspected cause.
type ModelCall struct {
	ID         string  `json:"id"`
	Provider   string  `json:"provider,omitempty"`
	Model      string  `json:"model,omitempty"`
	Lineage    string  `json:"lineage,omitempty"`
	Input      int     `json:"input"`
	CacheRead  int     `json:"cache_read"`
	CacheWrite int     `json:"cache_write"`
	Output     int     `json:"output"`
	HitRatio   float64 `json:"hit_ratio"`
	CostUSD    float64 `json:"cost_usd"`
	SavingUSD  float64 `json:"saving_usd"`
	// Unpriced: the model has no price, so CostUSD and SavingUSD are
	// unknown (0 here does not mean free).
	Unpriced  bool     `json:"unpriced,omitempty"`
	Break     bool     `json:"break,omitempty"`
	Changed   []string `json:"changed,omitempty"`
	Suspected string   `json:"suspected,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// maxCallErrorBytes caps a failed call's error on an event.
const maxCallErrorBytes = 1 << 10

// callRecord is the record a custom event carries, if it carries one.
func callRecord(ev engine.Event) (promptcache.Record, engine.TaskInfo, bool) {
	var c engine.Custom
	switch e := ev.(type) {
	case engine.Custom:
		c = e
	case *engine.Custom:
		if e == nil {
			return promptcache.Record{}, engine.TaskInfo{}, false
		}
		c = *e
	default:
		return promptcache.Record{}, engine.TaskInfo{}, false
	}
	switch r := c.Payload.(type) {
	case promptcache.Record:
		return r, c.Task, true
	case *promptcache.Record:
		if r != nil {
			return *r, c.Task, true
		}
	}
	return promptcache.Record{}, engine.TaskInfo{}, false
}

// promptCall converts a custom event carrying a promptcache.Record.
func (r *runEvents) promptCall(ev engine.Event, now time.Time) (Event, bool) {
	rec, task, ok := callRecord(ev)
	if !ok {
		return Event{}, false
	}
	u := rec.Usage
	mc := &ModelCall{
		ID: cutText(rec.CallID, 128), Provider: cutText(rec.Provider, 128), Model: cutText(rec.Model, 128), Lineage: cutText(rec.Lineage, 64),
		Input: u.Input, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite5m + u.CacheWrite1h, Output: u.Output,
		HitRatio: rec.HitRatio, CostUSD: rec.CostUSD, SavingUSD: rec.CostUSDUncached - rec.CostUSD,
		Unpriced: rec.Unpriced, Break: rec.Break.Detected, Error: cutText(rec.Error, maxCallErrorBytes),
	}
	if rec.Break.Detected {
		for _, d := range rec.Break.ChangedDimensions {
			mc.Changed = append(mc.Changed, cutText(string(d), 64))
		}
		mc.Changed = slices.Compact(mc.Changed)
		if s := rec.Break.Suspected; s != nil {
			mc.Suspected = cutText(string(*s), 64)
		}
	}
	x := Event{Kind: KindPromptCache, Thread: r.thread, Step: task.Step, Node: task.Name, TaskID: task.ID, Call: mc, Time: now}
	if ns := task.Namespace; ns != "" {
		x.Path, x.root = subgraphPath(ns)
	}
	return x, true
}

func (c *ModelCall) size() int {
	if c == nil {
		return 0
	}
	n := 128 + len(c.ID) + len(c.Provider) + len(c.Model) + len(c.Lineage) + len(c.Suspected) + len(c.Error)
	for _, d := range c.Changed {
		n += 16 + len(d)
	}
	return n
}

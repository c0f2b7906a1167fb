package runs_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/runs"
)

// A node's custom event carrying a promptcache.Record, in the thread's
// graph or in a subgraph, reaches subscribers as a prompt_cache event
// with the call's summary (never its hashes); other custom payloads are
// not forwarded.
func TestPromptCacheEvents(t *testing.T) {
	t.Parallel()
	ttl := promptcache.SuspectTTLExpired
	rec := func(id string) promptcache.Record {
		return promptcache.Record{CallID: id, Provider: "anthropic", Model: "claude-sonnet-4-5", Lineage: "main",
			Usage:    promptcache.Usage{Input: 10, CacheRead: 900, CacheWrite5m: 90, Output: 5},
			HitRatio: 0.9, CostUSD: 0.001, CostUSDUncached: 0.003,
			Hashes: promptcache.Hashes{MessagesPrefix: []string{"secret-hash"}},
			Break:  promptcache.Break{Detected: true, ChangedDimensions: []promptcache.Dimension{}, Suspected: &ttl}}
	}
	type S struct {
		N int `json:"n"`
	}
	gate := make(chan struct{})
	inner := engine.NewStateGraph[S]()
	inner.AddNode("agent", func(ctx context.Context, _ S) (engine.Output, error) {
		r := rec("inner-call")
		r.Unpriced, r.CostUSD, r.CostUSDUncached = true, 0, 0
		engine.Emit(ctx, r)
		return nil, nil
	})
	inner.AddEdge(engine.Start, "agent")
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[S]()
	outer.AddNode("call", func(ctx context.Context, _ S) (engine.Output, error) {
		<-gate
		engine.Emit(ctx, "not a record")
		engine.Emit(ctx, rec("outer-call"))
		return nil, nil
	})
	outer.AddSubgraph("react", sub)
	outer.AddEdge(engine.Start, "call").AddEdge("call", "react")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"g": g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	ctx := context.Background()
	if _, err := m.Start(ctx, "g", "pc", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	_, s, err := m.Subscribe(ctx, "pc")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	close(gate)
	var calls []runs.Event
	for ev := range s.C {
		if ev.Kind == runs.KindPromptCache {
			calls = append(calls, *ev)
		}
		if ev.Kind == runs.KindRunFinished {
			break
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d prompt_cache events; want 2: %+v", len(calls), calls)
	}
	if c := calls[0]; c.Node != "call" || c.Path != "" || c.Call.ID != "outer-call" || c.Call.CacheWrite != 90 || !c.Call.Break || c.Call.Suspected != "ttl_expired" || c.Call.SavingUSD != 0.002 || c.Call.Unpriced {
		t.Errorf("outer call event %+v %+v", c, c.Call)
	}
	if c := calls[1]; c.Node != "agent" || c.Path != "react" || c.Call.ID != "inner-call" || !c.Call.Unpriced {
		t.Errorf("subgraph call event %+v", c)
	}
	b, _ := json.Marshal(calls[0])
	if strings.Contains(string(b), "secret-hash") || !strings.Contains(string(b), `"kind":"prompt_cache"`) {
		t.Errorf("event JSON %s", b)
	}
}

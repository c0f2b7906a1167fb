package promptcache_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/promptcache"
)

// autoModel is a model whose requests carry a top-level automatic
// cache_control of ttl ("" for none), set by the caller before the layer
// sees the request.
func (f *fixture) autoModel(t *testing.T, ttl string) *anthropic.Model {
	t.Helper()
	h := f.cache.Hooks()
	before := h.BeforeCall
	h.BeforeCall = func(ctx context.Context, req *models.Request) error {
		if p, ok := req.Params.(*sdk.MessageNewParams); ok && ttl != "" {
			p.CacheControl = sdk.CacheControlEphemeralParam{Type: "ephemeral", TTL: sdk.CacheControlEphemeralTTL(ttl)}
		}
		return before(ctx, req)
	}
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: f.url, Model: "claude-sonnet-4-5", Hooks: h})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// withTop is markers(body) with the top-level automatic marker, which the
// provider places last, appended as "auto:<ttl>".
func withTop(body map[string]any) []string {
	out := markers(body)
	if cc, ok := body["cache_control"].(map[string]any); ok {
		ttl, _ := cc["ttl"].(string)
		out = append(out, "auto:"+ttl)
	}
	return out
}

// TestAutomaticModeRecordsMarkers: a call in automatic mode records the
// marker the provider places for it (and a bridge the layer adds), so
// the next call knows where this one wrote: a long turn gets its bridge,
// and a miss without one is explained as lookback_exceeded.
func TestAutomaticModeRecordsMarkers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		cfg      promptcache.Config
		script   bool
		want     []string // markers of the second request
		suspect  promptcache.Suspect
		detected bool
	}{
		{name: "bridged", want: []string{"tools[2]:5m", "system[0]:5m", "messages[20].content[0]:5m", "auto:5m"}},
		{name: "no bridge, lookback exceeded", cfg: promptcache.Config{NoBridge: true}, script: true,
			want: []string{"tools[2]:5m", "system[0]:5m", "auto:5m"}, detected: true, suspect: promptcache.SuspectLookbackExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, tc.cfg)
			if tc.script {
				f.server.Script(
					localprovider.Turn{Text: "one", Usage: usage(0, 5100, 20)},
					localprovider.Turn{Text: "two", Usage: usage(0, 5100, 20)},
				)
			}
			m := f.autoModel(t, "5m")
			ctx := promptcache.WithThread(context.Background(), "t-auto")
			if _, err := m.Generate(ctx, conversation("You are a weather agent.", 1), &models.CallOptions{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Generate(ctx, conversation("You are a weather agent.", 9), &models.CallOptions{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			if got := withTop(sent(t, f.server, 1)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("second request's markers %v, want %v", got, tc.want)
			}
			recs, err := f.cache.Records(context.Background(), "t-auto")
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			// The first call's automatic marker is on its last message
			// block (messages[2].content[0], message block 2).
			var auto *promptcache.Marker
			for i, mk := range recs[0].Markers {
				if mk.Auto {
					auto = &recs[0].Markers[i]
				}
			}
			if auto == nil || auto.At != "messages[2].content[0]" || auto.MessageBlock != 2 || auto.TTL != promptcache.TTL5m {
				t.Fatalf("first call's markers %+v: no automatic marker on messages[2].content[0]", recs[0].Markers)
			}
			if got := recs[1].BlocksSinceLastWrite; got != 24 {
				t.Errorf("blocks since last write %d, want 24", got)
			}
			b := recs[1].Break
			var suspect promptcache.Suspect
			if b.Suspected != nil {
				suspect = *b.Suspected
			}
			if b.Detected != tc.detected || suspect != tc.suspect {
				t.Errorf("break %+v (suspected %q), want detected=%v suspected %q", b, suspect, tc.detected, tc.suspect)
			}
		})
	}
}

// TestAutomaticTTLOrder: a caller's automatic 1h marker never follows a
// 5-minute marker of the layer's (the provider rejects that with a 400):
// it is downgraded to 5m, while the thread's latched static TTL stays.
func TestAutomaticTTLOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		threadTTL promptcache.TTL
		autoTTL   string
		long      bool // the second turn adds more than the lookback: a 5m bridge
		want      string
	}{
		{name: "5m thread, 1h auto", threadTTL: promptcache.TTL5m, autoTTL: "1h", want: "auto:5m"},
		{name: "1h thread, 1h auto", threadTTL: promptcache.TTL1h, autoTTL: "1h", want: "auto:1h"},
		{name: "1h thread, 1h auto after a bridge", threadTTL: promptcache.TTL1h, autoTTL: "1h", long: true, want: "auto:5m"},
		{name: "1h thread, 5m auto", threadTTL: promptcache.TTL1h, autoTTL: "5m", want: "auto:5m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, promptcache.Config{TTL: func(context.Context, string) promptcache.TTL { return tc.threadTTL }})
			m := f.autoModel(t, tc.autoTTL)
			ctx := promptcache.WithThread(context.Background(), "t-ttl")
			turns := []int{1, 2}
			if tc.long {
				turns = []int{1, 9}
			}
			for _, n := range turns {
				// The double answers a 1h marker after a 5m one with a 400.
				if _, err := m.Generate(ctx, conversation("You are a weather agent.", n), &models.CallOptions{Tools: tools}); err != nil {
					t.Fatal(err)
				}
			}
			got := withTop(sent(t, f.server, 1))
			seen5m := false
			for _, mk := range got {
				switch {
				case strings.HasSuffix(mk, ":5m"):
					seen5m = true
				case strings.HasSuffix(mk, ":1h") && seen5m:
					t.Errorf("markers %v: a 1h marker after a 5m one", got)
				}
			}
			if got[len(got)-1] != tc.want {
				t.Errorf("markers %v, want the automatic one %s", got, tc.want)
			}
			for _, mk := range got[:2] {
				if !strings.HasSuffix(mk, ":"+string(tc.threadTTL)) {
					t.Errorf("markers %v: the static prefix left the thread's %s", got, tc.threadTTL)
				}
			}
		})
	}
}

// humanBlocks is a human message of one text block per text.
func humanBlocks(texts ...string) models.Message {
	var bs []models.Block
	for _, s := range texts {
		bs = append(bs, models.TextBlock(s))
	}
	return models.Message{Type: models.TypeHuman, Content: models.Blocks(bs...)}
}

// TestLookbackAtTheEdge: a turn that adds 19 or 20 blocks after the
// previous call's last marker reads its entry, 21 misses it; the layer
// counts the blocks as the provider (the double) does, so it reports the
// 21-block miss as lookback_exceeded and no break at 19 or 20.
func TestLookbackAtTheEdge(t *testing.T) {
	t.Parallel()
	for _, n := range []int{19, 20, 21} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			f := setup(t, promptcache.Config{NoBridge: true})
			m := f.anthropic(t, "claude-sonnet-4-5")
			ctx := promptcache.WithThread(context.Background(), "t-edge")
			// A first message of ~2,000 tokens: losing it is a break.
			msgs := []models.Message{models.System("You are a weather agent."), models.Human(strings.Repeat("Long question. ", 530))}
			if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			// n new blocks: answer/question pairs, the last question
			// holding the remainder as blocks of its own.
			pairs := (n - 1) / 2
			for i := range pairs - 1 {
				msgs = append(msgs, models.AI(fmt.Sprint("answer ", i)), models.Human(fmt.Sprint("question ", i)))
			}
			var last []string
			for i := range n - 2*pairs + 1 {
				last = append(last, fmt.Sprint("part ", i))
			}
			msgs = append(msgs, models.AI("answer"), humanBlocks(last...))
			if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			recs, err := f.cache.Records(context.Background(), "t-edge")
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			r := recs[1]
			if r.BlocksSinceLastWrite != n {
				t.Fatalf("blocks since last write %d, want %d", r.BlocksSinceLastWrite, n)
			}
			first := recs[0].Usage.Prompt()
			reads := r.Usage.CacheRead >= first
			if reads != (n <= promptcache.Lookback) {
				t.Errorf("read %d of the first call's %d tokens; want the entry read: %v", r.Usage.CacheRead, first, n <= promptcache.Lookback)
			}
			var suspect promptcache.Suspect
			if r.Break.Suspected != nil {
				suspect = *r.Break.Suspected
			}
			if want := n > promptcache.Lookback; r.Break.Detected != want || want && suspect != promptcache.SuspectLookbackExceeded {
				t.Errorf("break %+v (suspected %q), want detected=%v as lookback_exceeded", r.Break, suspect, want)
			}
		})
	}
}

// flakySaver fails the reads of a given checkpoint while fail is set.
type flakySaver struct {
	checkpoints.Saver
	fail atomic.Bool
}

func (s *flakySaver) Get(ctx context.Context, cfg checkpoints.Config) (*checkpoints.Tuple, error) {
	if s.fail.Load() && cfg.CheckpointID != "" {
		return nil, errors.New("checkpoint store unavailable")
	}
	return s.Saver.Get(ctx, cfg)
}

// TestBaselineUnknown: when the walk to a call's previous call on its
// branch cannot be made — its checkpoint is not saved and cannot be
// waited for (DurabilityExit), or the saver fails — the call is judged
// against no baseline: no break is claimed, the record says why, and the
// error reaches Config.OnError.
func TestBaselineUnknown(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		durability engine.Durability
		saverFails bool
		wantErr    error
	}{
		{name: "wait fails under DurabilityExit", durability: engine.DurabilityExit, wantErr: engine.ErrCheckpointNotSaved},
		{name: "saver fails", saverFails: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			saver := &flakySaver{Saver: checkpoints.NewMemory()}
			var mu sync.Mutex
			var reported []error
			f := setup(t, promptcache.Config{})
			pc, err := promptcache.New(promptcache.Config{Store: f.store, Checkpoints: saver, Now: f.clock.now, OnError: func(err error) {
				mu.Lock()
				reported = append(reported, err)
				mu.Unlock()
			}})
			if err != nil {
				t.Fatal(err)
			}
			// The double's usage is scripted so that, compared with the
			// first call, the second would be a break.
			f.server.Script(
				localprovider.Turn{Text: "one", Usage: usage(0, 5100, 20)},
				localprovider.Turn{Text: "two", Usage: usage(0, 5100, 40)},
			)
			m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: f.url, Model: "claude-sonnet-4-5", Hooks: pc.Hooks()})
			if err != nil {
				t.Fatal(err)
			}
			type State struct {
				Messages []models.Message `json:"messages" reduce:"add_messages"`
			}
			g := engine.NewStateGraph[State]()
			g.AddNode("agent", func(ctx context.Context, s State) (engine.Output, error) {
				reply, err := models.Call(ctx, m, s.Messages, &models.CallOptions{Tools: tools})
				if err != nil {
					return nil, err
				}
				return engine.Update{"messages": []models.Message{reply}}, nil
			})
			g.AddEdge(engine.Start, "agent")
			graph, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
			if err != nil {
				t.Fatal(err)
			}
			in := func(q string) engine.Update { return engine.Update{"messages": []models.Message{models.Human(q)}} }
			if _, err := graph.Invoke(context.Background(), in("Weather in Paris?"), &engine.RunOptions{ThreadID: "t-unknown"}); err != nil {
				t.Fatal(err)
			}
			saver.fail.Store(tc.saverFails)
			if _, err := graph.Invoke(context.Background(), in("And in Rome?"), &engine.RunOptions{ThreadID: "t-unknown", Durability: tc.durability}); err != nil {
				t.Fatal(err)
			}
			saver.fail.Store(false)
			recs, err := pc.Records(context.Background(), "t-unknown")
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			b := recs[1].Break
			if b.Detected || b.Suspected == nil || *b.Suspected != promptcache.SuspectBaselineUnknown || b.Reason == "" || recs[1].PrevCallID != "" {
				t.Errorf("second call: prev %q, break %+v; want no break, baseline_unknown with a reason", recs[1].PrevCallID, b)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reported) != 1 || tc.wantErr != nil && !errors.Is(reported[0], tc.wantErr) {
				t.Errorf("errors reported %v, want one (%v)", reported, tc.wantErr)
			}
		})
	}
}

// TestUnpriced: a model the price table does not know is recorded as
// unpriced, not as a call that cost $0; a priced one is not.
func TestUnpriced(t *testing.T) {
	t.Parallel()
	cases := []struct {
		model    string
		unpriced bool
	}{{"claude-sonnet-4-5", false}, {"claude-opus-4-1", true}}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			f := setup(t, promptcache.Config{Prices: map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)}})
			ctx := promptcache.WithThread(context.Background(), "t-price")
			if _, err := f.anthropic(t, tc.model).Generate(ctx, conversation("You are a weather agent.", 1), &models.CallOptions{Tools: tools}); err != nil {
				t.Fatal(err)
			}
			recs, err := f.cache.Records(context.Background(), "t-price")
			if err != nil || len(recs) != 1 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			if r := recs[0]; r.Unpriced != tc.unpriced || !tc.unpriced && r.CostUSD <= 0 {
				t.Errorf("record unpriced=%v cost %v; want unpriced=%v", r.Unpriced, r.CostUSD, tc.unpriced)
			}
		})
	}
}

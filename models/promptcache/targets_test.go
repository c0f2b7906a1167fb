package promptcache_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/store"
)

// The targets of issue #17, measured against the double's emulated cache
// through the real SDKs: nothing here scripts usage; every number is what
// the double computed from the bytes it was sent.

// sonnet is the price table of the targets: Claude Sonnet's $3 / $15 per
// million tokens with Anthropic's cache multipliers.
var sonnet = map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)}

// After lets clock drive the double too (its cache lifetimes); nothing
// here injects a slow first byte, so it fires at once.
func (c *clock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.now()
	return ch
}

// Now is clock's localprovider.Clock face.
func (c *clock) Now() time.Time { return c.now() }

// bigSystem is a ~6,000-token system prompt (the double counts ⌈bytes/4⌉).
var bigSystem = "You are a careful travel agent. " + strings.Repeat("Check every fact twice and cite the tool you used. ", 470)

// eightTools are the conversation's tools.
var eightTools = func() []models.ToolSpec {
	var out []models.ToolSpec
	for i, name := range []string{"get_weather", "get_time", "search", "book_hotel", "book_flight", "convert_currency", "translate", "get_news"} {
		out = append(out, models.ToolSpec{
			Name:        name,
			Description: fmt.Sprintf("Tool %d: %s for a city, with the usual caveats about freshness and accuracy.", i, strings.ReplaceAll(name, "_", " ")),
			Parameters: map[string]any{"type": "object", "properties": map[string]any{
				"city": map[string]any{"type": "string", "description": "The city, in English."},
				"when": map[string]any{"type": "string", "description": "An ISO 8601 date, or empty for today."},
			}, "required": []any{"city"}},
		})
	}
	return out
}()

// agentTurns is how many model calls a conversation makes: 19 tool calls
// and a final answer.
const agentTurns = 20

// respond is the double's model for the conversation: a tool call per
// turn, cycling through the tools, until the 20th turn answers; a fan-out
// task ("Task …") is answered at once.
func respond(r localprovider.Request) (localprovider.Turn, bool) {
	a := r.Anthropic
	if a == nil {
		return localprovider.Turn{}, false
	}
	last := a.Messages[len(a.Messages)-1]
	if b := last.Content[len(last.Content)-1]; b.Type == "text" && strings.HasPrefix(b.Text, "Task") {
		return localprovider.Turn{Text: "Done: " + b.Text}, true
	}
	turn := 1
	for _, m := range a.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	if turn >= agentTurns {
		return localprovider.Turn{Text: "Here is your plan."}, true
	}
	tool := eightTools[turn%len(eightTools)].Name
	return localprovider.Turn{Text: "Checking.", ToolCalls: []localprovider.ToolCall{{Name: tool, Args: fmt.Sprintf(`{"city":"city %d"}`, turn)}}}, true
}

type agentState struct {
	Messages []models.Message `json:"messages" reduce:"add_messages"`
	Task     string           `json:"task"`
}

// agentFixture is a model→tools graph on the caching double, the cache
// and the double sharing one clock.
type agentFixture struct {
	cache  *promptcache.Cache
	server *localprovider.Server
	clock  *clock
	graph  *engine.Graph[agentState]
}

func newAgent(t *testing.T, cfg promptcache.Config, disableCache bool) *agentFixture {
	t.Helper()
	f := &agentFixture{clock: &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}}
	saver := checkpoints.NewMemory()
	if cfg.Store == nil {
		st, err := store.NewMemory(store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store = st
	}
	cfg.Checkpoints, cfg.Now, cfg.Prices = saver, f.clock.now, sonnet
	cfg.OnError = func(err error) { t.Errorf("promptcache: %v", err) }
	var err error
	if f.cache, err = promptcache.New(cfg); err != nil {
		t.Fatal(err)
	}
	var ts interface{ Close() }
	var url string
	srv, hts := localprovider.NewTestServer(localprovider.Config{Clock: f.clock, Respond: respond, DisablePromptCache: disableCache})
	f.server, ts, url = srv, hts, hts.URL
	t.Cleanup(ts.Close)
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: url, Model: "claude-sonnet-4-5", Hooks: f.cache.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	g := engine.NewStateGraph[agentState]()
	g.AddNode("agent", func(ctx context.Context, s agentState) (engine.Output, error) {
		sys, err := f.cache.System(ctx, promptcache.Section("role", func(context.Context) (string, error) { return bigSystem, nil }))
		if err != nil {
			return nil, err
		}
		reply, err := models.Call(ctx, m, append([]models.Message{sys}, s.Messages...), &models.CallOptions{Tools: eightTools})
		if err != nil {
			return nil, err
		}
		f.clock.add(20 * time.Second) // a model call's worth of time
		return engine.Update{"messages": []models.Message{reply}}, nil
	})
	g.AddNode("tools", func(ctx context.Context, s agentState) (engine.Output, error) {
		ai := s.Messages[len(s.Messages)-1]
		var out []models.Message
		for _, c := range ai.ToolCalls {
			out = append(out, models.ToolResult(c.ID, models.Text(fmt.Sprintf("%s(%v): 21°C, sunny, nothing unusual.", c.Name, c.Args["city"]))))
		}
		return engine.Update{"messages": out}, nil
	})
	// child is a Send child: the conversation so far and its own task.
	g.AddNode("child", func(ctx context.Context, s agentState) (engine.Output, error) {
		ctx = promptcache.LeadThenFan(ctx, "")
		sys, err := f.cache.System(ctx, promptcache.Section("role", func(context.Context) (string, error) { return bigSystem, nil }))
		if err != nil {
			return nil, err
		}
		msgs := append([]models.Message{sys}, s.Messages...)
		_, err = models.Call(ctx, m, append(msgs, models.Human(s.Task)), &models.CallOptions{Tools: eightTools})
		return nil, err
	})
	g.AddEdge(engine.Start, "agent")
	g.AddConditionalEdges("agent", func(_ context.Context, s agentState) (engine.Route, error) {
		if last := s.Messages[len(s.Messages)-1]; len(last.ToolCalls) > 0 {
			return engine.To("tools"), nil
		}
		return engine.To(engine.End), nil
	}, nil)
	g.AddEdge("tools", "agent")
	// fan is entered only by a Command(Goto) from a test: five Send
	// children of the finished conversation.
	g.AddNode("fan", func(_ context.Context, s agentState) (engine.Output, error) {
		var sends []any
		for i := range 5 {
			sends = append(sends, engine.Send{Node: "child", Arg: agentState{Messages: s.Messages, Task: fmt.Sprintf("Task %d: summarise the plan for traveller %d.", i, i)}})
		}
		return engine.Command{Goto: sends}, nil
	}, engine.SendTargets("child"))
	if f.graph, err = g.Compile(engine.CompileOptions{Checkpointer: saver}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *agentFixture) run(t *testing.T, thread string, input any, opts *engine.RunOptions) {
	t.Helper()
	if opts == nil {
		opts = &engine.RunOptions{}
	}
	opts.ThreadID = thread
	if opts.RecursionLimit == 0 {
		opts.RecursionLimit = 100
	}
	if _, err := f.graph.Invoke(context.Background(), input, opts); err != nil {
		t.Fatal(err)
	}
}

func (f *agentFixture) records(t *testing.T, thread string) []promptcache.Record {
	t.Helper()
	recs, err := f.cache.Records(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func question() engine.Update {
	return engine.Update{"messages": []models.Message{models.Human("Plan a week in Lisbon, Porto and Madrid for two.")}}
}

// TestTargetConversation: a 20-turn tool-using conversation with a
// 6,000-token system prompt and 8 tools reads ≥ 95% of its input from
// the cache on every turn from the second, and costs ≤ 0.2× the same
// conversation without caching (the double's cache turned off).
func TestTargetConversation(t *testing.T) {
	t.Parallel()
	f := newAgent(t, promptcache.Config{}, false)
	f.run(t, "conv", question(), nil)
	recs := f.records(t, "conv")
	if len(recs) != agentTurns {
		t.Fatalf("%d calls, want %d", len(recs), agentTurns)
	}
	if p := recs[0].Usage.Prompt(); p < 6500 {
		t.Fatalf("the first prompt is %d tokens, want the 6k system prompt and 8 tools", p)
	}
	var cost, uncachedPriced float64
	var ratios []string
	for i, r := range recs {
		cost += r.CostUSD
		uncachedPriced += r.CostUSDUncached
		ratios = append(ratios, fmt.Sprintf("%d:%.4f", i+1, r.HitRatio))
		if i > 0 && r.HitRatio < 0.95 {
			t.Errorf("turn %d: %.4f of the prompt read from the cache (usage %+v), want ≥ 0.95", i+1, r.HitRatio, r.Usage)
		}
		if r.Break.Detected || len(r.Pending) > 0 {
			t.Errorf("turn %d: break %+v, pending %v", i+1, r.Break, r.Pending)
		}
	}

	// The same conversation on a double that caches nothing.
	off := newAgent(t, promptcache.Config{}, true)
	off.run(t, "conv", question(), nil)
	var uncached float64
	offRecs := off.records(t, "conv")
	for _, r := range offRecs {
		uncached += r.CostUSD
	}
	if len(offRecs) != agentTurns || uncached != uncachedPriced {
		t.Errorf("uncached run: %d calls costing $%.6f; the cached run priced without caching: $%.6f", len(offRecs), uncached, uncachedPriced)
	}
	t.Logf("read ratio per turn: %s", strings.Join(ratios, " "))
	t.Logf("cost $%.6f cached, $%.6f uncached: %.4f×", cost, uncached, cost/uncached)
	if cost > 0.2*uncached {
		t.Errorf("cost %.4f× the uncached conversation, want ≤ 0.2×", cost/uncached)
	}
}

// forkAtTurn finds the checkpoint after turn n's tools ran (the agent
// next, n AI messages), the point a person would fork from.
func (f *agentFixture) forkAtTurn(t *testing.T, thread string, n int) checkpoints.Config {
	t.Helper()
	hist, err := f.graph.GetStateHistory(context.Background(), checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range hist {
		msgs, _ := s.Values["messages"].([]models.Message)
		ais := 0
		for _, m := range msgs {
			if m.Type == models.TypeAI {
				ais++
			}
		}
		if ais == n && len(s.Next) == 1 && s.Next[0] == "agent" {
			return s.Config
		}
	}
	t.Fatalf("no checkpoint after turn %d", n)
	return checkpoints.Config{}
}

// TestTargetForkAndFan: a time-travel fork from turn 10 and five Send
// children of the finished conversation each read ≥ 90% of the prefix
// they share with their parent (here: of their whole prompt, which holds
// it), and none is reported as a break.
func TestTargetForkAndFan(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name       string
		durability engine.Durability
	}{{"sync", engine.DurabilitySync}, {"async", engine.DurabilityAsync}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			f := newAgent(t, promptcache.Config{}, false)
			thread := "fork-" + d.name
			f.run(t, thread, question(), &engine.RunOptions{Durability: d.durability})
			main := f.records(t, thread)

			// Time travel: from turn 10, the person changes the plan.
			at := f.forkAtTurn(t, thread, 10)
			cfg, err := f.graph.UpdateState(context.Background(), at, engine.Update{"messages": []models.Message{models.Human("Skip Madrid; add Seville instead.")}}, "tools")
			if err != nil {
				t.Fatal(err)
			}
			f.run(t, thread, nil, &engine.RunOptions{CheckpointID: cfg.CheckpointID, Durability: d.durability})
			recs := f.records(t, thread)
			fork := recs[len(main):]
			if len(fork) != agentTurns-10 {
				t.Fatalf("%d calls on the fork, want %d", len(fork), agentTurns-10)
			}
			first := fork[0]
			// Its baseline is turn 11, which ran from the checkpoint forked.
			if first.Lineage != "fork:branch" || first.PrevCallID != main[10].CallID {
				t.Errorf("the fork's first call: lineage %q compared with %s, want fork:branch and turn 11 (%s)", first.Lineage, first.PrevCallID, main[10].CallID)
			}
			if first.HitRatio < 0.9 {
				t.Errorf("the fork's first call read %.4f of its prompt (usage %+v), want ≥ 0.9", first.HitRatio, first.Usage)
			}
			for i, r := range fork {
				if r.Break.Detected {
					t.Errorf("fork call %d: break %+v", i+1, r.Break)
				}
				if i > 0 && r.PrevCallID != fork[i-1].CallID {
					t.Errorf("fork call %d compared with %s, want the fork's call before it", i+1, r.PrevCallID)
				}
			}
			t.Logf("%s: the fork's first call read %d of %d prompt tokens (%.4f)", d.name, first.Usage.CacheRead, first.Usage.Prompt(), first.HitRatio)

			// Five Send children of the fork's finished conversation.
			f.run(t, thread, engine.Command{Goto: []any{"fan"}}, &engine.RunOptions{Durability: d.durability})
			recs = f.records(t, thread)
			children := recs[len(main)+len(fork):]
			if len(children) != 5 {
				t.Fatalf("%d child calls, want 5", len(children))
			}
			var got []string
			for i, r := range children {
				got = append(got, fmt.Sprintf("%.4f", r.HitRatio))
				if r.Lineage != "fork:send" || r.HitRatio < 0.9 || r.Break.Detected {
					t.Errorf("child %d: lineage %q, read %.4f (usage %+v), break %+v; want fork:send, ≥ 0.9, none", i, r.Lineage, r.HitRatio, r.Usage, r.Break)
				}
			}
			t.Logf("%s: the Send children read %s of their prompts", d.name, strings.Join(got, " "))
		})
	}
}

// breakConversation is the first call of a break case: the big system
// prompt, the eight tools, a ~2,000-token document and one tool turn.
func breakConversation() []models.Message {
	msgs := []models.Message{
		models.System(bigSystem),
		models.Human("Plan the trip in this itinerary: " + strings.Repeat("Day by day, with trains and hotels. ", 230)),
	}
	for i := range 1 {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			models.AIWithToolCalls("", models.ToolCall{ID: id, Name: "get_weather", Args: map[string]any{"city": fmt.Sprint("c", i)}}),
			models.ToolResult(id, models.Text(fmt.Sprintf("%d°C", 10+i))),
		)
	}
	return msgs
}

// moreTurns adds n tool turns (2n blocks) and a question to msgs.
func moreTurns(msgs []models.Message, n int) []models.Message {
	msgs = append([]models.Message(nil), msgs...)
	for i := range n {
		id := fmt.Sprintf("toolu_more_%02d", i)
		msgs = append(msgs,
			models.AIWithToolCalls("", models.ToolCall{ID: id, Name: "get_time", Args: map[string]any{"city": fmt.Sprint("c", i)}}),
			models.ToolResult(id, models.Text(fmt.Sprintf("%02d:00", i))),
		)
	}
	return append(msgs, models.AI("two"), models.Human("And the day after?"))
}

// TestTargetBreaks injects each change of the issue between two calls on
// the caching double, nothing scripted: each break is detected and named
// by what the double actually stopped reading; a second call with
// nothing changed is no break.
func TestTargetBreaks(t *testing.T) {
	t.Parallel()
	type change struct {
		msgs  []models.Message
		opts  *models.CallOptions
		model string
	}
	reordered := append([]models.ToolSpec{eightTools[1], eightTools[0]}, eightTools[2:]...)
	cases := []struct {
		name    string
		cfg     promptcache.Config
		change  func(c *change, clk *clock)
		dims    []promptcache.Dimension
		suspect promptcache.Suspect
		tools   []string
		noBreak bool
	}{
		{name: "no change", noBreak: true},
		{name: "timestamp in the system prompt", dims: []promptcache.Dimension{promptcache.DimSystem},
			change: func(c *change, _ *clock) { c.msgs[0] = models.System(bigSystem + " It is 12:01:07.") }},
		{name: "reordered tool", dims: []promptcache.Dimension{promptcache.DimTools}, tools: []string{"get_time", "get_weather"},
			change: func(c *change, _ *clock) { c.opts.Tools = reordered }},
		{name: "model switch", dims: []promptcache.Dimension{promptcache.DimModel},
			change: func(c *change, _ *clock) { c.model = "claude-opus-4-1" }},
		{name: "tool_choice", dims: []promptcache.Dimension{promptcache.DimToolChoice},
			change: func(c *change, _ *clock) { c.opts.ToolChoice = models.ToolChoiceAny }},
		{name: "ttl expired", suspect: promptcache.SuspectTTLExpired,
			change: func(_ *change, clk *clock) { clk.add(6 * time.Minute) }},
		{name: "more than 20 new blocks", cfg: promptcache.Config{NoBridge: true}, suspect: promptcache.SuspectLookbackExceeded,
			change: func(c *change, _ *clock) { c.msgs = moreTurns(c.msgs, 11) }},
		{name: "more than 20 new blocks, bridged", noBreak: true,
			change: func(c *change, _ *clock) { c.msgs = moreTurns(c.msgs, 11) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
			cfg := tc.cfg
			cfg.Now, cfg.Prices = clk.now, sonnet
			cfg.OnError = func(err error) { t.Errorf("promptcache: %v", err) }
			pc, err := promptcache.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, ts := localprovider.NewTestServer(localprovider.Config{Clock: clk})
			t.Cleanup(ts.Close)
			model := func(name string) *anthropic.Model {
				m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: ts.URL, Model: name, Hooks: pc.Hooks()})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			ctx := promptcache.WithThread(context.Background(), "t")
			// A cold call, then a warm one: the baseline.
			msgs := breakConversation()
			for _, add := range [][]models.Message{nil, {models.AI("one"), models.Human("And tomorrow?")}} {
				msgs = append(msgs, add...)
				if _, err := model("claude-sonnet-4-5").Generate(ctx, msgs, &models.CallOptions{Tools: eightTools}); err != nil {
					t.Fatal(err)
				}
				clk.add(time.Minute)
			}
			c := &change{msgs: append(msgs, models.AI("two"), models.Human("And the day after?")), opts: &models.CallOptions{Tools: eightTools}, model: "claude-sonnet-4-5"}
			if tc.change != nil {
				tc.change(c, clk)
			}
			if _, err := model(c.model).Generate(ctx, c.msgs, c.opts); err != nil {
				t.Fatal(err)
			}
			recs, err := pc.Records(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 3 {
				t.Fatalf("%d records", len(recs))
			}
			recs = recs[1:]
			r := recs[1]
			b := r.Break
			var suspect promptcache.Suspect
			if b.Suspected != nil {
				suspect = *b.Suspected
			}
			t.Logf("reads %d → %d (%.1f%% drop): detected=%v dims=%v tools=%v suspected=%q", recs[0].Usage.CacheRead, r.Usage.CacheRead, b.ReadDropPct, b.Detected, b.ChangedDimensions, b.ChangedTools, suspect)
			if r.PrevCallID != recs[0].CallID {
				t.Errorf("compared with %q, want the first call", r.PrevCallID)
			}
			if b.Detected == tc.noBreak {
				t.Fatalf("break %+v, want detected=%v", b, !tc.noBreak)
			}
			if fmt.Sprint(b.ChangedDimensions) != fmt.Sprint(tc.dims) && len(tc.dims)+len(b.ChangedDimensions) > 0 {
				t.Errorf("changed %v, want %v", b.ChangedDimensions, tc.dims)
			}
			if suspect != tc.suspect {
				t.Errorf("suspected %q, want %q", suspect, tc.suspect)
			}
			if tc.tools != nil && fmt.Sprint(b.ChangedTools) != fmt.Sprint(tc.tools) {
				t.Errorf("changed tools %v, want %v", b.ChangedTools, tc.tools)
			}
		})
	}
}

// TestTargetOpenAI: OpenAI's implicit cache through the real SDK — each
// thread's requests carry its prompt_cache_key and read what it wrote;
// another thread with the same prefix is routed to its own entries;
// cached_tokens are the records' reads; a changed system prompt and an
// idle prefix are breaks, named.
func TestTargetOpenAI(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
	pc, err := promptcache.New(promptcache.Config{Now: clk.now, OnError: func(err error) { t.Errorf("promptcache: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	s, ts := localprovider.NewTestServer(localprovider.Config{Clock: clk})
	t.Cleanup(ts.Close)
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: ts.URL + "/v1/", Model: "gpt-5-mini", Hooks: pc.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	call := func(thread string, msgs []models.Message) promptcache.Record {
		t.Helper()
		if _, err := m.Generate(promptcache.WithThread(context.Background(), thread), msgs, &models.CallOptions{Tools: eightTools}); err != nil {
			t.Fatal(err)
		}
		clk.add(time.Minute)
		recs, err := pc.Records(context.Background(), thread)
		if err != nil {
			t.Fatal(err)
		}
		return recs[len(recs)-1]
	}
	msgs := breakConversation()
	a1 := call("a", msgs)
	msgs = append(msgs, models.AI("one"), models.Human("And tomorrow?"))
	a2 := call("a", msgs)
	b1 := call("b", msgs) // the same prefix on another thread's key
	for i, r := range s.Requests() {
		want := promptcache.PromptCacheKey("a")
		if i == 2 {
			want = promptcache.PromptCacheKey("b")
		}
		if r.OpenAI.PromptCacheKey != want {
			t.Errorf("request %d: prompt_cache_key %q, want %q", i, r.OpenAI.PromptCacheKey, want)
		}
	}
	if a1.Usage.CacheRead != 0 || a2.Usage.CacheRead == 0 || a2.Usage.CacheRead%128 != 0 || a2.HitRatio < 0.9 || a2.Break.Detected {
		t.Errorf("thread a: reads %d then %d (ratio %.4f), break %+v; want 0, then most of the prompt in 128-token steps", a1.Usage.CacheRead, a2.Usage.CacheRead, a2.HitRatio, a2.Break)
	}
	if b1.Usage.CacheRead != 0 {
		t.Errorf("thread b read %d tokens of thread a's entries", b1.Usage.CacheRead)
	}
	t.Logf("thread a: cached_tokens %d → %d of %d (%.4f); thread b: %d", a1.Usage.CacheRead, a2.Usage.CacheRead, a2.Usage.Prompt(), a2.HitRatio, b1.Usage.CacheRead)

	stamped := append([]models.Message{models.System(bigSystem + " It is 12:03.")}, msgs[1:]...)
	a3 := call("a", append(stamped, models.AI("two"), models.Human("And after?")))
	if b := a3.Break; !b.Detected || fmt.Sprint(b.ChangedDimensions) != fmt.Sprint([]promptcache.Dimension{promptcache.DimSystem, promptcache.DimMessages}) {
		t.Errorf("a timestamp in the system prompt: break %+v", b)
	}
	b2 := call("b", append(msgs, models.AI("two"), models.Human("And after?")))
	clk.add(6 * time.Minute)
	b3 := call("b", append(msgs, models.AI("two"), models.Human("And after?"), models.AI("three"), models.Human("Thanks.")))
	if b2.Break.Detected || b2.Usage.CacheRead == 0 {
		t.Errorf("thread b's second call: reads %d, break %+v", b2.Usage.CacheRead, b2.Break)
	}
	if b := b3.Break; !b.Detected || b.Suspected == nil || *b.Suspected != promptcache.SuspectTTLExpired {
		t.Errorf("an idle prefix: break %+v", b)
	}
}

package promptcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/store"
)

// clock is an injectable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	cache  *promptcache.Cache
	server *localprovider.Server
	url    string
	clock  *clock
	store  store.Store
	cfg    promptcache.Config
}

func setup(t *testing.T, cfg promptcache.Config) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}}
	if cfg.Store == nil {
		s, err := store.NewMemory(store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store = s
	}
	if cfg.Now == nil {
		cfg.Now = f.clock.now
	}
	cfg.OnError = func(err error) { t.Errorf("promptcache: %v", err) }
	f.store, f.cfg = cfg.Store, cfg
	var err error
	f.cache, err = promptcache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, ts := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(ts.Close)
	f.server, f.url = s, ts.URL
	return f
}

func (f *fixture) anthropic(t *testing.T, model string) *anthropic.Model {
	t.Helper()
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: f.url, Model: model, Hooks: f.cache.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var tools = []models.ToolSpec{
	{Name: "get_weather", Description: "Weather in a city.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}},
	{Name: "get_time", Description: "Time in a city.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}},
	{Name: "search", Description: "Search the web.", Parameters: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
}

// conversation is a tool-using conversation of n turns after the system
// prompt.
func conversation(system string, n int) []models.Message {
	msgs := []models.Message{models.System(system)}
	for i := range n {
		id := fmt.Sprintf("toolu_%02d", i)
		msgs = append(msgs,
			models.Human(fmt.Sprintf("Question %d: what is the weather in city %d?", i, i)),
			models.AIWithToolCalls("", models.ToolCall{ID: id, Name: "get_weather", Args: map[string]any{"city": fmt.Sprint("c", i)}}),
			models.ToolResult(id, models.Text(fmt.Sprintf("%d°C", 10+i))),
		)
	}
	return msgs
}

func usage(read, write, input int) *localprovider.Usage {
	return &localprovider.Usage{InputTokens: input, CacheReadInputTokens: read, CacheCreationInputTokens: write, OutputTokens: 10}
}

// sent decodes the i-th request the double received (from 0).
func sent(t *testing.T, s *localprovider.Server, i int) map[string]any {
	t.Helper()
	reqs := s.Requests()
	if i >= len(reqs) {
		t.Fatalf("%d requests, want more than %d", len(reqs), i)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

// markers lists where the request carried cache_control, as
// "tools[2]:1h", "system[0]:1h", "messages[5].content[0]:5m".
func markers(body map[string]any) []string {
	var out []string
	mark := func(at string, b any) {
		m, _ := b.(map[string]any)
		if cc, ok := m["cache_control"].(map[string]any); ok {
			out = append(out, fmt.Sprintf("%s:%v", at, cc["ttl"]))
		}
	}
	for i, tl := range asList(body["tools"]) {
		mark(fmt.Sprintf("tools[%d]", i), tl)
	}
	for i, b := range asList(body["system"]) {
		mark(fmt.Sprintf("system[%d]", i), b)
	}
	for i, m := range asList(body["messages"]) {
		for j, b := range asList(m.(map[string]any)["content"]) {
			mark(fmt.Sprintf("messages[%d].content[%d]", i, j), b)
		}
	}
	return out
}

func asList(v any) []any { l, _ := v.([]any); return l }

func TestPlacement(t *testing.T) {
	t.Parallel()
	f := setup(t, promptcache.Config{TTL: func(context.Context, string) promptcache.TTL { return promptcache.TTL1h }})
	m := f.anthropic(t, "claude-sonnet-4-5")
	ctx := promptcache.WithThread(context.Background(), "t-placement")
	sys, err := f.cache.System(ctx,
		promptcache.Section("role", func(context.Context) (string, error) { return "You are a weather agent.", nil }),
		promptcache.Boundary(),
		promptcache.Section("user", func(context.Context) (string, error) { return "The user lives in Paris.", nil }),
	)
	if err != nil {
		t.Fatal(err)
	}
	msgs := append([]models.Message{sys}, conversation("", 2)[1:]...)
	msgs = append(msgs, models.Human("And now?"))
	if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	body := sent(t, f.server, 0)
	want := []string{"tools[2]:1h", "system[0]:1h", "messages[6].content[0]:5m"}
	if got := markers(body); !slices.Equal(got, want) {
		t.Errorf("markers = %v, want %v", got, want)
	}
	if n := len(asList(body["system"])); n != 2 {
		t.Errorf("%d system blocks, want the static and the dynamic part", n)
	}

	// A fire-and-forget fork marks the second-to-last message and writes
	// nothing past what it shares with its parent.
	if _, err := m.Generate(promptcache.SkipCacheWrite(ctx), append(msgs, models.AI("ok"), models.Human("Summarise this thread in 5 words.")), &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	want = []string{"tools[2]:1h", "system[0]:1h", "messages[7].content[0]:5m"}
	if got := markers(sent(t, f.server, 1)); !slices.Equal(got, want) {
		t.Errorf("fork markers = %v, want %v", got, want)
	}
	recs, err := f.cache.Records(context.Background(), "t-placement")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Lineage != "fork:skip_write" || recs[0].Lineage != "main" {
		t.Fatalf("records %+v", recs)
	}
	// The parent's next call goes on from its own last call, not from
	// the fork's: the fork wrote nothing the parent reads.
	if _, err := m.Generate(ctx, append(msgs, models.AI("ok"), models.Human("Thanks.")), &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	recs, err = f.cache.Records(context.Background(), "t-placement")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2].PrevCallID != recs[0].CallID {
		t.Fatalf("the parent's next call compares with %q, want its own last call %q", recs[2].PrevCallID, recs[0].CallID)
	}
}

// TestBridgeMarker: a turn that adds more blocks than the lookback
// reaches gets a second message marker inside it, never a fifth marker.
func TestBridgeMarker(t *testing.T) {
	t.Parallel()
	f := setup(t, promptcache.Config{})
	m := f.anthropic(t, "claude-sonnet-4-5")
	ctx := promptcache.WithThread(context.Background(), "t-bridge")
	msgs := conversation("You are a weather agent.", 1)
	if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	msgs = conversation("You are a weather agent.", 9) // 24 more blocks
	if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	got := markers(sent(t, f.server, 1))
	want := []string{"tools[2]:5m", "system[0]:5m", "messages[20].content[0]:5m", "messages[26].content[0]:5m"}
	if !slices.Equal(got, want) {
		t.Errorf("markers = %v, want %v", got, want)
	}
}

// render renders one request through a fresh Cache on st, as a process
// that starts with only the store would.
func render(t *testing.T, st store.Store, ttl promptcache.TTL, drift bool) []byte {
	t.Helper()
	c, err := promptcache.New(promptcache.Config{Store: st, TTL: func(context.Context, string) promptcache.TTL { return ttl }})
	if err != nil {
		t.Fatal(err)
	}
	m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := promptcache.WithThread(context.Background(), "t-stable")
	sys, err := c.System(ctx, promptcache.Section("now", func(context.Context) (string, error) {
		return "Today is " + time.Now().Format(time.RFC3339Nano), nil // memoised: computed once per thread
	}))
	if err != nil {
		t.Fatal(err)
	}
	ts := slices.Clone(tools)
	if drift {
		ts[0].Description = "Weather in a city (flag flipped)."
	}
	msgs := append([]models.Message{sys}, conversation("", 3)[1:]...)
	p, err := m.Render(msgs, &models.CallOptions{Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	req := models.NewRequest(m.Info(), msgs, nil, &p, false)
	req.Headers = map[string]string{"anthropic-beta": "b-two,b-one"}
	if drift {
		req.Headers = nil // the feature turned off: the latched header stays
	}
	if err := c.Hooks().BeforeCall(ctx, req); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, []byte("\nbeta: "+req.Headers["anthropic-beta"])...)
}

// TestByteStable: the same thread renders the same bytes in a fresh
// process, even after a configuration change and a tool's description
// drifting; Reset lets them change.
func TestByteStable(t *testing.T) {
	t.Parallel()
	st, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := render(t, st, promptcache.TTL1h, false)
	again := render(t, st, promptcache.TTL5m, true)
	if string(first) != string(again) {
		t.Fatalf("bytes differ across processes:\n%s\n%s", first, again)
	}
	if !strings.Contains(string(first), `"ttl":"1h"`) || !strings.Contains(string(first), "beta: b-one,b-two") {
		t.Errorf("latched TTL or betas missing: %s", first)
	}
	c, _ := promptcache.New(promptcache.Config{Store: st})
	if err := c.Reset(context.Background(), "t-stable"); err != nil {
		t.Fatal(err)
	}
	if after := render(t, st, promptcache.TTL5m, true); string(after) == string(first) {
		t.Error("Reset kept the latches")
	}
}

func TestSections(t *testing.T) {
	t.Parallel()
	f := setup(t, promptcache.Config{})
	ctx := promptcache.WithThread(context.Background(), "t-sections")
	cached, uncached := 0, 0
	secs := []promptcache.SystemSection{
		promptcache.Section("a", func(context.Context) (string, error) { cached++; return fmt.Sprint("static ", cached), nil }),
		promptcache.Boundary(),
		promptcache.DangerousUncachedSection("b", func(context.Context) (string, error) { uncached++; return fmt.Sprint("dynamic ", uncached), nil }, "the user's open files change every turn"),
	}
	for range 3 {
		if _, err := f.cache.System(ctx, secs...); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := f.cache.System(ctx, secs...)
	if err != nil {
		t.Fatal(err)
	}
	if cached != 1 || uncached != 4 {
		t.Errorf("computed cached %d, uncached %d times; want 1 and 4", cached, uncached)
	}
	if got := msg.Text(); got != "static 1dynamic 4" {
		t.Errorf("system text %q", got)
	}
	_, err = f.cache.System(ctx, promptcache.DangerousUncachedSection("c", func(context.Context) (string, error) { return "", nil }, " "))
	if !errors.Is(err, promptcache.ErrNoReason) {
		t.Errorf("err = %v, want ErrNoReason", err)
	}
}

// TestBreakDetection injects each change of the issue between two calls
// whose second reads less from the cache (scripted usage) and checks the
// break is named; a second call with nothing changed and more reads is
// no break.
func TestBreakDetection(t *testing.T) {
	t.Parallel()
	reordered := []models.ToolSpec{tools[1], tools[0], tools[2]}
	cases := []struct {
		name     string
		cfg      promptcache.Config
		change   func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model)
		read2    int
		dims     []promptcache.Dimension
		suspect  promptcache.Suspect
		tools    []string
		detected bool
	}{
		{name: "no change", read2: 6000},
		{name: "timestamp in system", read2: 0, detected: true, dims: []promptcache.Dimension{promptcache.DimSystem},
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				msgs[0] = models.System("You are a weather agent. It is 12:01:07.")
				return msgs, nil
			}},
		{name: "reordered tool", read2: 0, detected: true, dims: []promptcache.Dimension{promptcache.DimTools}, tools: []string{"get_time", "get_weather"},
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				o.Tools = reordered
				return msgs, nil
			}},
		{name: "model switch", read2: 0, detected: true, dims: []promptcache.Dimension{promptcache.DimModel},
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				return msgs, nil // the model is switched below
			}},
		{name: "tool_choice", read2: 2000, detected: true, dims: []promptcache.Dimension{promptcache.DimToolChoice},
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				o.ToolChoice = models.ToolChoiceAny
				return msgs, nil
			}},
		{name: "ttl expired", read2: 0, detected: true, suspect: promptcache.SuspectTTLExpired,
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				f.clock.add(6 * time.Minute)
				return msgs, nil
			}},
		{name: "more than 20 new blocks", cfg: promptcache.Config{NoBridge: true}, read2: 0, detected: true, suspect: promptcache.SuspectLookbackExceeded,
			change: func(f *fixture, msgs []models.Message, o *models.CallOptions) ([]models.Message, *anthropic.Model) {
				return conversation("You are a weather agent.", 9), nil
			}},
		{name: "small drop is noise", read2: 4800},
		{name: "drop with nothing changed", read2: 1000, detected: true, suspect: promptcache.SuspectUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, tc.cfg)
			m := f.anthropic(t, "claude-sonnet-4-5")
			ctx := promptcache.WithThread(context.Background(), "t-"+tc.name)
			f.server.Script(
				// The thread's first call writes the prefix and reads
				// nothing: every case is a break on the second call
				// (measured against what the first left readable).
				localprovider.Turn{Text: "one", Usage: usage(0, 5100, 20)},
				// As the API counts a miss: what is not read is written
				// again (the prompt stays 5,120 tokens).
				localprovider.Turn{Text: "two", Usage: usage(tc.read2, 5100-tc.read2, 20)},
			)
			msgs := conversation("You are a weather agent.", 1)
			o := &models.CallOptions{Tools: tools}
			if _, err := m.Generate(ctx, msgs, o); err != nil {
				t.Fatal(err)
			}
			f.clock.add(time.Minute)
			msgs = append(slices.Clone(msgs), models.AI("one"), models.Human("And tomorrow?"))
			m2 := m
			if tc.change != nil {
				msgs, _ = tc.change(f, msgs, o)
			}
			if tc.name == "model switch" {
				m2 = f.anthropic(t, "claude-opus-4-1")
			}
			if _, err := m2.Generate(ctx, msgs, o); err != nil {
				t.Fatal(err)
			}
			recs, err := f.cache.Records(context.Background(), "t-"+tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 {
				t.Fatalf("%d records", len(recs))
			}
			r := recs[1]
			if r.PrevCallID != recs[0].CallID {
				t.Errorf("compared with %q, want the first call", r.PrevCallID)
			}
			b := r.Break
			if b.Detected != tc.detected || !slices.Equal(b.ChangedDimensions, tc.dims) && len(tc.dims)+len(b.ChangedDimensions) > 0 {
				t.Fatalf("break %+v, want detected=%v dims=%v", b, tc.detected, tc.dims)
			}
			var suspect promptcache.Suspect
			if b.Suspected != nil {
				suspect = *b.Suspected
			}
			if suspect != tc.suspect {
				t.Errorf("suspected %q, want %q", suspect, tc.suspect)
			}
			if tc.tools != nil && !slices.Equal(b.ChangedTools, tc.tools) {
				t.Errorf("changed tools %v, want %v", b.ChangedTools, tc.tools)
			}
		})
	}
}

// TestNoBreakOverARun: a 10-turn tool loop with nothing injected reports
// no break and no pending change, and prices every call.
func TestNoBreakOverARun(t *testing.T) {
	t.Parallel()
	f := setup(t, promptcache.Config{Prices: map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)}})
	m := f.anthropic(t, "claude-sonnet-4-5")
	ctx := promptcache.WithThread(context.Background(), "t-run")
	system := "You are a weather agent. " + strings.Repeat("Be precise. ", 2000)
	for turn := 1; turn <= 10; turn++ {
		f.server.Script(localprovider.Turn{Text: "ok", Usage: usage(6000+500*(turn-1), 500, 30)})
		if _, err := m.Generate(ctx, conversation(system, turn), &models.CallOptions{Tools: tools}); err != nil {
			t.Fatal(err)
		}
		f.clock.add(30 * time.Second)
	}
	recs, err := f.cache.Records(context.Background(), "t-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.Break.Detected || len(r.Pending) > 0 {
			t.Errorf("call %d: break %+v, pending %v", i, r.Break, r.Pending)
		}
		if r.CostUSD <= 0 || r.CostUSD >= r.CostUSDUncached || r.HitRatio < 0.9 {
			t.Errorf("call %d: cost %v (uncached %v), hit ratio %v", i, r.CostUSD, r.CostUSDUncached, r.HitRatio)
		}
	}
	if r := recs[9]; r.Usage.CacheRead != 10500 || r.Usage.CacheWrite5m != 500 || r.Usage.Input != 30 {
		t.Errorf("usage %+v", r.Usage)
	}
}

func TestOpenAI(t *testing.T) {
	t.Parallel()
	f := setup(t, promptcache.Config{})
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.url + "/v1/", Model: "gpt-5-mini", Hooks: f.cache.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := promptcache.WithThread(context.Background(), "t-openai")
	f.server.Script(
		localprovider.Turn{Text: "one", Usage: usage(4096, 0, 300)},
		localprovider.Turn{Text: "two", Usage: usage(0, 0, 4500)},
	)
	msgs := conversation("You are a weather agent.", 1)
	if _, err := m.Generate(ctx, msgs, &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	msgs[0] = models.System("You are a weather agent. It is 12:01.")
	if _, err := m.Generate(ctx, append(msgs, models.AI("one"), models.Human("more")), &models.CallOptions{Tools: tools}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if key := sent(t, f.server, i)["prompt_cache_key"]; key != promptcache.PromptCacheKey("t-openai") {
			t.Errorf("request %d: prompt_cache_key %v", i, key)
		}
	}
	recs, err := f.cache.Records(context.Background(), "t-openai")
	if err != nil {
		t.Fatal(err)
	}
	if u := recs[0].Usage; u.CacheRead != 4096 || u.Input != 300 {
		t.Errorf("usage %+v", u)
	}
	if b := recs[1].Break; !b.Detected || !slices.Equal(b.ChangedDimensions, []promptcache.Dimension{promptcache.DimSystem, promptcache.DimMessages}) {
		t.Errorf("break %+v", b)
	}
}

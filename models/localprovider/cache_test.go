package localprovider_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superstep-dev/superstep/models/localprovider"
)

// testClock is a Clock the test moves: Now reads a settable time, and
// each After hands its channel to the test (on waits), which fires it.
type testClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan chan time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Unix(1_800_000_000, 0), waits: make(chan chan time.Time, 16)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *testClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- ch
	return ch
}

// cachedTools are eight tools of about 1,600 tokens in all (the default
// estimate is ⌈bytes/4⌉), the last one marked with a 1h TTL: the tools tier.
func cachedTools() []anthropic.ToolUnionParam {
	var tools []anthropic.ToolUnionParam
	for i := range 8 {
		tools = append(tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        fmt.Sprintf("tool_%d", i),
			Description: anthropic.String(strings.Repeat(fmt.Sprintf("Tool %d looks things up. ", i), 32)),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"q": map[string]any{"type": "string"}}},
		}})
	}
	tools[len(tools)-1].OfTool.CacheControl = anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}
	return tools
}

// staticSystem is a system prompt of about 1,500 tokens.
var staticSystem = strings.Repeat("You are a careful assistant. Answer briefly. ", 135)

// conversation is a request in the shape our model layer sends: the tools
// (1h marker on the last), a static system block (1h marker) and a
// dynamic one, the messages, and the top-level automatic marker (5m),
// which lands on the last message block.
func conversation(system string, msgs ...anthropic.MessageParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 256, Tools: cachedTools(),
		System: []anthropic.TextBlockParam{
			{Text: system, CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}},
			{Text: "Be kind."},
		},
		Messages:     msgs,
		CacheControl: anthropic.NewCacheControlEphemeralParam(),
	}
}

func user(texts ...string) anthropic.MessageParam {
	var blocks []anthropic.ContentBlockParamUnion
	for _, t := range texts {
		blocks = append(blocks, anthropic.NewTextBlock(t))
	}
	return anthropic.NewUserMessage(blocks...)
}

func assistant(text string) anthropic.MessageParam {
	return anthropic.NewAssistantMessage(anthropic.NewTextBlock(text))
}

// count is what count_tokens says a request's prompt is.
func count(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) int {
	t.Helper()
	res, err := c.Messages.CountTokens(t.Context(), anthropic.MessageCountTokensParams{Model: p.Model, Messages: p.Messages, Tools: toolsForCount(p.Tools), System: anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: p.System}})
	if err != nil {
		t.Fatal(err)
	}
	return int(res.InputTokens)
}

func toolsForCount(tools []anthropic.ToolUnionParam) []anthropic.MessageCountTokensToolUnionParam {
	var out []anthropic.MessageCountTokensToolUnionParam
	for _, t := range tools {
		out = append(out, anthropic.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
	}
	return out
}

// tiers are the prompt sizes up to the tools marker and the system
// marker, measured with count_tokens (a one-token message subtracted).
func tiers(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) (tools, system int) {
	t.Helper()
	x := []anthropic.MessageParam{user("x")}
	base := count(t, c, anthropic.MessageNewParams{Model: p.Model, Messages: x})
	tools = count(t, c, anthropic.MessageNewParams{Model: p.Model, Messages: x, Tools: p.Tools}) - base
	system = count(t, c, anthropic.MessageNewParams{Model: p.Model, Messages: x, Tools: p.Tools, System: p.System[:1]}) - base
	return tools, system
}

func send(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams, opts ...option.RequestOption) anthropic.Usage {
	t.Helper()
	msg, err := c.Messages.New(t.Context(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return msg.Usage
}

func TestAnthropicCacheFirstTurnWritesByTTL(t *testing.T) {
	t.Parallel()
	_, c := setupAnthropic(t, localprovider.Config{})
	p := conversation(staticSystem, user("What is the weather in Paris?"))
	tools, system := tiers(t, c, p)
	u := send(t, c, p)
	total := count(t, c, p)
	if u.CacheReadInputTokens != 0 || u.CacheCreationInputTokens != int64(total) || u.InputTokens != 0 {
		t.Fatalf("usage = %s, want all %d tokens written (the automatic marker is on the last block)", u.RawJSON(), total)
	}
	if u.CacheCreation.Ephemeral1hInputTokens != int64(system) || u.CacheCreation.Ephemeral5mInputTokens != int64(total-system) {
		t.Fatalf("cache_creation = %s, want 1h %d (tools %d + system) and 5m %d", u.CacheCreation.RawJSON(), system, tools, total-system)
	}
}

// TestAnthropicCacheSecondTurn sends a first turn, changes something, and
// checks how much of the second turn is read: all of the first turn, the
// tools and system tiers, the tools tier, or nothing.
func TestAnthropicCacheSecondTurn(t *testing.T) {
	t.Parallel()
	first := func() anthropic.MessageNewParams { return conversation(staticSystem, user("Weather in Paris?")) }
	next := func() anthropic.MessageNewParams {
		return conversation(staticSystem, user("Weather in Paris?"), assistant("18°C and dry."), user("And Rome?"))
	}
	const (
		all    = "first turn"
		system = "tools and system"
		tools  = "tools"
		none   = "nothing"
	)
	cases := []struct {
		name    string
		advance time.Duration
		key     string
		second  func() anthropic.MessageNewParams
		reads   string
	}{
		{"turn 2 reads turn 1", 0, "", next, all},
		{"a timestamp in system busts it", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.System[0].Text = "Today is 2026-08-21 10:42:07. " + staticSystem
			return p
		}, tools},
		{"reordered tools bust everything", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.Tools[0], p.Tools[1] = p.Tools[1], p.Tools[0]
			return p
		}, none},
		{"tool_choice keeps tools and system", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
			return p
		}, system},
		{"thinking keeps tools and system", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.Thinking = anthropic.ThinkingConfigParamOfEnabled(1024)
			return p
		}, system},
		{"speed keeps the tools", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.Speed = "fast"
			return p
		}, tools},
		{"the dynamic system block after the marker keeps tools and system", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.System[1].Text = "Be kind. It is 10:42."
			return p
		}, system},
		{"20 new blocks in one turn read", 0, "", func() anthropic.MessageNewParams {
			return conversation(staticSystem, user("Weather in Paris?"), assistant("18°C."), user(numbered(19)...))
		}, all},
		{"21 new blocks in one turn miss the messages", 0, "", func() anthropic.MessageNewParams {
			return conversation(staticSystem, user("Weather in Paris?"), assistant("18°C."), user(numbered(20)...))
		}, system},
		{"another model shares nothing", 0, "", func() anthropic.MessageNewParams {
			p := next()
			p.Model = "claude-test-2"
			return p
		}, none},
		{"another API key shares nothing", 0, "sk-ant-other", next, none},
		{"5m entries expire, 1h ones live", 6 * time.Minute, "", next, system},
		{"4m keeps every entry", 4 * time.Minute, "", next, all},
		{"1h entries expire too", 61 * time.Minute, "", next, none},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			_, c := setupAnthropic(t, localprovider.Config{Clock: clock})
			u1 := send(t, c, first())
			clock.Advance(tc.advance)
			var opts []option.RequestOption
			if tc.key != "" {
				opts = append(opts, option.WithAPIKey(tc.key))
			}
			p := tc.second()
			u2 := send(t, c, p, opts...)
			toolTier, systemTier := tiers(t, c, p)
			if !(0 < toolTier && toolTier < systemTier && systemTier < int(u1.CacheCreationInputTokens)) {
				t.Fatalf("tiers tools %d < system %d < turn 1's write %d do not hold", toolTier, systemTier, u1.CacheCreationInputTokens)
			}
			want := map[string]int{all: int(u1.CacheCreationInputTokens), system: systemTier, tools: toolTier, none: 0}[tc.reads]
			if int(u2.CacheReadInputTokens) != want {
				t.Fatalf("read %d, want %d (%s); turn 1 wrote %d, tiers: tools %d, system %d", u2.CacheReadInputTokens, want, tc.reads, u1.CacheCreationInputTokens, toolTier, systemTier)
			}
			if total := count(t, c, p); int(u2.InputTokens+u2.CacheCreationInputTokens+u2.CacheReadInputTokens) != total {
				t.Fatalf("usage %s does not add up to the prompt's %d tokens", u2.RawJSON(), total)
			}
		})
	}
}

// numbered is n short text blocks.
func numbered(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("part %d", i))
	}
	return out
}

func TestAnthropicCacheReadRefreshesTheEntry(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	_, c := setupAnthropic(t, localprovider.Config{Clock: clock})
	p := conversation(staticSystem, user("Weather in Paris?"))
	u1 := send(t, c, p)
	for range 3 { // each read within 5m moves the 5m expiry on
		clock.Advance(4 * time.Minute)
		if u := send(t, c, p); u.CacheReadInputTokens != u1.CacheCreationInputTokens {
			t.Fatalf("read %d after a refresh, want %d", u.CacheReadInputTokens, u1.CacheCreationInputTokens)
		}
	}
}

func TestAnthropicCacheMinimum(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		cfg    localprovider.Config
		model  string
		writes bool
	}{
		{"default table: haiku 4.5 needs 4096", localprovider.Config{}, "claude-haiku-4-5", false},
		{"default table: sonnet 4.5 needs 1024", localprovider.Config{}, "claude-sonnet-4-5", true},
		{"configured minimum", localprovider.Config{CacheMinTokens: map[string]int{"claude-test": 8000}}, "claude-test", false},
		{"cache turned off", localprovider.Config{DisablePromptCache: true}, "claude-test", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := setupAnthropic(t, tc.cfg)
			p := anthropic.MessageNewParams{
				Model: anthropic.Model(tc.model), MaxTokens: 64, CacheControl: anthropic.NewCacheControlEphemeralParam(),
				System:   []anthropic.TextBlockParam{{Text: staticSystem}}, // about 1,500 tokens
				Messages: []anthropic.MessageParam{user("hi")},
			}
			u1 := send(t, c, p)
			u2 := send(t, c, p)
			total := int64(count(t, c, p))
			if !tc.writes {
				if u1.CacheCreationInputTokens != 0 || u2.CacheReadInputTokens != 0 || u2.InputTokens != total {
					t.Fatalf("usage %s then %s, want no write, no read, all %d as input", u1.RawJSON(), u2.RawJSON(), total)
				}
				return
			}
			if u1.CacheCreationInputTokens != total || u2.CacheReadInputTokens != total {
				t.Fatalf("usage %s then %s, want %d written then read", u1.RawJSON(), u2.RawJSON(), total)
			}
		})
	}
}

func TestAnthropicCacheScriptedUsageStillWrites(t *testing.T) {
	t.Parallel()
	s, c := setupAnthropic(t, localprovider.Config{})
	s.Script(localprovider.Turn{Text: "ok", Usage: &localprovider.Usage{InputTokens: 1, OutputTokens: 1}})
	p := conversation(staticSystem, user("hi"))
	if u := send(t, c, p); u.InputTokens != 1 || u.CacheCreationInputTokens != 0 {
		t.Fatalf("scripted usage not reported as it is: %s", u.RawJSON())
	}
	if u := send(t, c, p); u.CacheReadInputTokens != int64(count(t, c, p)) {
		t.Fatalf("the scripted turn wrote nothing: %s", u.RawJSON())
	}
}

// TestAnthropicCacheConcurrentWriters sends two identical requests that
// are both in flight before either starts its response: both write (and
// pay for) the same entries. A third, sent once the first has streamed
// message_start ("lead then fan"), reads them.
func TestAnthropicCacheConcurrentWriters(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, c := setupAnthropic(t, localprovider.Config{Clock: clock})
	hold := localprovider.Turn{Text: "ok", Fault: &localprovider.Fault{FirstByteDelay: time.Second}}
	s.Script(hold, hold)
	p := conversation(staticSystem, user("Summarise the report."))
	total := int64(count(t, c, p))

	usages := make(chan anthropic.Usage, 2)
	for range 2 {
		go func() {
			msg, err := c.Messages.New(t.Context(), p)
			if err != nil {
				t.Error(err)
				usages <- anthropic.Usage{}
				return
			}
			usages <- msg.Usage
		}()
	}
	// Both requests have looked the cache up and wait on the clock.
	waits := []chan time.Time{<-clock.waits, <-clock.waits}
	for _, w := range waits {
		w <- clock.Now()
	}
	for range 2 {
		if u := <-usages; u.CacheCreationInputTokens != total || u.CacheReadInputTokens != 0 {
			t.Fatalf("a parallel sibling's usage = %s, want all %d tokens written", u.RawJSON(), total)
		}
	}

	// Lead then fan: the lead streams; once its message_start arrives a
	// sibling with the same prefix and a new last message reads it.
	fanSystem := staticSystem + " Fan out." // entries nobody has written yet
	lead := conversation(fanSystem, user("Summarise chapter 1."))
	st := c.Messages.NewStreaming(t.Context(), lead)
	if !st.Next() || st.Current().Type != "message_start" {
		t.Fatalf("lead stream: %v", st.Err())
	}
	leadUsage := st.Current().Message.Usage
	sibling := conversation(fanSystem, user("Summarise chapter 2."))
	u := send(t, c, sibling)
	_, system := tiers(t, c, sibling)
	if u.CacheReadInputTokens != int64(system) {
		t.Fatalf("sibling read %d, want the shared tools and system (%d); lead usage %s", u.CacheReadInputTokens, system, leadUsage.RawJSON())
	}
	for st.Next() {
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestAnthropicCacheNotVisibleBeforeMessageStart holds a writer before its
// first byte and checks that a request arriving meanwhile does not read
// what the writer will write.
func TestAnthropicCacheNotVisibleBeforeMessageStart(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	s, c := setupAnthropic(t, localprovider.Config{Clock: clock})
	p := conversation(staticSystem, user("hi"))
	s.Script(localprovider.Turn{Text: "held", Fault: &localprovider.Fault{FirstByteDelay: time.Second}})
	done := make(chan anthropic.Usage, 1)
	go func() {
		msg, err := c.Messages.New(t.Context(), p)
		if err != nil {
			t.Error(err)
		}
		done <- msg.Usage
	}()
	w := <-clock.waits // the writer has looked up and waits before its first byte
	if u := send(t, c, p); u.CacheReadInputTokens != 0 {
		t.Fatalf("read %d from a writer that has not started", u.CacheReadInputTokens)
	}
	w <- clock.Now()
	<-done
}

func TestAnthropicCacheMarkerValidation(t *testing.T) {
	t.Parallel()
	marked := func(text, ttl string) anthropic.ContentBlockParamUnion {
		cc := anthropic.NewCacheControlEphemeralParam() // a zero param would be left out
		cc.TTL = anthropic.CacheControlEphemeralTTL(ttl)
		return anthropic.ContentBlockParamUnion{OfText: &anthropic.TextBlockParam{Text: text, CacheControl: cc}}
	}
	thinking := anthropic.NewAssistantMessage(anthropic.NewThinkingBlock("sig", "hmm"), anthropic.NewTextBlock("ok"))
	cases := []struct {
		name   string
		params func(p *anthropic.MessageNewParams)
		opts   []option.RequestOption
		want   string // "" passes
	}{
		{"four markers pass", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", ""), marked("b", ""), marked("c", ""), marked("d", ""))}
		}, nil, ""},
		{"five markers", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", ""), marked("b", ""), marked("c", ""), marked("d", ""), marked("e", ""))}
		}, nil, "A maximum of 4 blocks with cache_control"},
		{"four explicit and the automatic one", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", ""), marked("b", ""), marked("c", ""), marked("d", ""))}
			p.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}, nil, "Found 5"},
		{"1h after 5m", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", "5m"), marked("b", "1h"))}
		}, nil, "must not come after"},
		{"1h before 5m passes", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", "1h"), marked("b", "5m"))}
		}, nil, ""},
		{"automatic 1h after an explicit 5m", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", "5m"), anthropic.NewTextBlock("b"))}
			p.CacheControl = anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}
		}, nil, "must not come after"},
		{"automatic on a block marked with another TTL", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(marked("a", "1h"))}
			p.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}, nil, "already has a cache_control"},
		{"marker on a thinking block", func(p *anthropic.MessageNewParams) {
			p.Messages = []anthropic.MessageParam{user("hi"), thinking}
		}, []option.RequestOption{option.WithJSONSet("messages.1.content.0.cache_control", map[string]string{"type": "ephemeral"})}, "thinking"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := setupAnthropic(t, localprovider.Config{})
			p := userParams("hi")
			tc.params(&p)
			_, err := c.Messages.New(t.Context(), p, tc.opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var apiErr *anthropic.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Error(), tc.want) {
				t.Fatalf("err = %v, want 400 with %q", err, tc.want)
			}
		})
	}
}

// TestAnthropicCacheAutomaticWalksBackPastThinking checks that the
// automatic marker lands on the last block that may carry one: a final
// assistant thinking block is cached as part of the prefix, not marked.
func TestAnthropicCacheAutomaticWalksBackPastThinking(t *testing.T) {
	t.Parallel()
	_, c := setupAnthropic(t, localprovider.Config{})
	p := conversation(staticSystem, user("hi"), anthropic.NewAssistantMessage(anthropic.NewTextBlock("partial"), anthropic.NewThinkingBlock("sig", strings.Repeat("think ", 100))))
	u := send(t, c, p)
	if u.InputTokens == 0 || u.CacheCreationInputTokens == 0 || int(u.InputTokens+u.CacheCreationInputTokens) != count(t, c, p) {
		t.Fatalf("usage = %s, want the trailing thinking block uncached input", u.RawJSON())
	}
}

// TestAnthropicCacheLookbackCountsContentBlocks: the 20-block lookback
// counts content blocks (tools, system blocks, message blocks) as the
// API does, not the double's tier pseudo-blocks: a message marker 20
// content blocks after a written system entry reads it, 21 do not, even
// though the ⟨tool_choice, thinking⟩ tier sits between them.
func TestAnthropicCacheLookbackCountsContentBlocks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		distance int // content blocks from the system marker to the message marker
		reads    bool
	}{{19, true}, {20, true}, {21, false}}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.distance), func(t *testing.T) {
			t.Parallel()
			_, c := setupAnthropic(t, localprovider.Config{})
			first := conversation(staticSystem, user("x"))
			first.CacheControl = anthropic.CacheControlEphemeralParam{}
			for i := range first.Tools {
				first.Tools[i].OfTool.CacheControl = anthropic.CacheControlEphemeralParam{}
			}
			send(t, c, first) // writes the system entry only
			// The second request's one marker is on its last message
			// block: system[1] and the message blocks lie between.
			var blocks []anthropic.ContentBlockParamUnion
			for _, s := range numbered(tc.distance - 1) {
				blocks = append(blocks, anthropic.NewTextBlock(s))
			}
			blocks[len(blocks)-1].OfText.CacheControl = anthropic.NewCacheControlEphemeralParam()
			p := conversation(staticSystem, anthropic.NewUserMessage(blocks...))
			p.CacheControl = anthropic.CacheControlEphemeralParam{}
			for i := range p.Tools {
				p.Tools[i].OfTool.CacheControl = anthropic.CacheControlEphemeralParam{}
			}
			p.System[0].CacheControl = anthropic.CacheControlEphemeralParam{}
			u := send(t, c, p)
			_, systemTier := tiers(t, c, p)
			want := 0
			if tc.reads {
				want = systemTier
			}
			if int(u.CacheReadInputTokens) != want {
				t.Fatalf("read %d, want %d (system tier %d)", u.CacheReadInputTokens, want, systemTier)
			}
		})
	}
}

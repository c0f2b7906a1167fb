package cveagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cveagent"
	"github.com/superstep-dev/superstep/examples/cveassessment"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/models/openai"
)

const log4shell = "CVE-2021-44228" // 10.0: reviewed

// setup compiles the graph on model (nil: the offline model) with a
// memory checkpointer, and names a thread for the test.
func setup(t *testing.T, model models.ChatModel) (*engine.Graph[cveagent.State], *engine.RunOptions) {
	t.Helper()
	g, err := cveagent.New(cveagent.Options{Model: model, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g, &engine.RunOptions{ThreadID: t.Name()}
}

// stateOf reads a thread's state at its head.
func stateOf(t *testing.T, g *engine.Graph[cveagent.State], thread string) (cveagent.State, []string) {
	t.Helper()
	st, err := g.GetState(t.Context(), checkpoints.Config{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st.Values)
	if err != nil {
		t.Fatal(err)
	}
	var s cveagent.State
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s, st.Next
}

// toolCalls lists the tool names the agent called, in order.
func toolCalls(msgs []models.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			out = append(out, tc.Name)
		}
	}
	return out
}

// runToReview runs a CVE above 9.0 to the review's interrupt and checks
// the question.
func runToReview(t *testing.T, g *engine.Graph[cveagent.State], opts *engine.RunOptions) cveagent.Question {
	t.Helper()
	_, err := g.Invoke(t.Context(), cveagent.Input(log4shell), opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) || len(intr.Interrupts) != 1 {
		t.Fatalf("want the review's interrupt, got %v", err)
	}
	q, ok := intr.Interrupts[0].Value.(cveagent.Question)
	if !ok {
		t.Fatalf("interrupt value %T", intr.Interrupts[0].Value)
	}
	if q.CVEID != log4shell || q.Score != 10 || q.Severity != "Critical" || q.Vector != "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H" || q.Schema == nil || q.Schema.Type != "object" {
		t.Fatalf("question %+v", q)
	}
	return q
}

func TestOfflineLoopAsksBeforePublishingAboveNine(t *testing.T) {
	t.Parallel()
	g, opts := setup(t, nil)
	q := runToReview(t, g, opts)
	s, next := stateOf(t, g, opts.ThreadID)
	if !slices.Equal(next, []string{cveagent.NodeReview}) {
		t.Fatalf("next %v", next)
	}
	if got, want := toolCalls(s.Messages), []string{cveagent.ToolFetchCVE, cveagent.ToolFetchCVSS, cveagent.ToolScoreCVSS}; !slices.Equal(got, want) {
		t.Fatalf("tool calls %v, want %v", got, want)
	}
	var tools, ais int
	for _, m := range s.Messages {
		switch m.Type {
		case models.TypeTool:
			tools++
			if m.Status != models.StatusSuccess {
				t.Errorf("tool message %+v", m)
			}
		case models.TypeAI:
			ais++
			if off, _ := m.ResponseMetadata["offline"].(bool); !off || !strings.HasPrefix(m.Text(), localprovider.OfflineLabel) {
				t.Errorf("an offline reply not marked: %+v", m)
			}
		}
	}
	if tools != 3 || ais != 3 || s.Published != nil || !strings.Contains(q.Summary, "CWE-502") || s.Summary != q.Summary {
		t.Fatalf("%d tool and %d ai messages; state %+v", tools, ais, s)
	}
}

func TestReviewAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		answer    any
		decision  string
		severity  string // published; "" when not published
		published bool
	}{
		{"approve button", true, cveagent.DecisionApproved, "Critical", true},
		{"approve form", map[string]any{"action": "approve", "reason": "confirmed"}, cveagent.DecisionApproved, "Critical", true},
		{"edit severity", map[string]any{"action": "edit", "severity": "High", "reason": "not internet-facing here"}, cveagent.DecisionEdited, "High", true},
		{"reject button", false, cveagent.DecisionRejected, "", false},
		{"reject string", "reject", cveagent.DecisionRejected, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, opts := setup(t, nil)
			runToReview(t, g, opts)
			out, err := g.Invoke(t.Context(), engine.Command{Resume: tc.answer}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if out.Decision != tc.decision || (out.Published != nil) != tc.published {
				t.Fatalf("decision %q, published %+v", out.Decision, out.Published)
			}
			if tc.published && (out.Published.Severity != tc.severity || out.Published.Score != 10 || out.Published.Decision != tc.decision || out.Published.CVEID != log4shell) {
				t.Fatalf("published %+v", out.Published)
			}
		})
	}
}

// A bad answer is asked again with the reason next to its field; nothing
// is published until a valid one comes.
func TestReviewAsksAgainAfterABadAnswer(t *testing.T) {
	t.Parallel()
	g, opts := setup(t, nil)
	runToReview(t, g, opts)
	_, err := g.Invoke(t.Context(), engine.Command{Resume: map[string]any{"action": "edit"}}, opts)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) {
		t.Fatalf("want the question again, got %v", err)
	}
	q := intr.Interrupts[0].Value.(cveagent.Question)
	if q.Errors["severity"] == "" || !strings.Contains(q.Problem, "severity") {
		t.Fatalf("question %+v", q)
	}
	out, err := g.Invoke(t.Context(), engine.Command{Resume: map[string]any{"action": "edit", "severity": "Medium"}}, opts)
	if err != nil || out.Published == nil || out.Published.Severity != "Medium" {
		t.Fatalf("out %+v, %v", out, err)
	}
}

// Scores at or under 9.0 are published without a review; a vendor's
// statement is read and preferred.
func TestAtOrUnderNineIsPublishedWithoutReview(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id       string
		calls    []string
		score    float64
		severity string
	}{
		{"CVE-2014-0160", []string{cveagent.ToolFetchCVE, cveagent.ToolFetchCVSS, cveagent.ToolFetchVendor, cveagent.ToolScoreCVSS}, 7.5, "High"},
		{"CVE-2099-0001", []string{cveagent.ToolFetchCVE, cveagent.ToolFetchCVSS, cveagent.ToolFetchVendor, cveagent.ToolScoreCVSS}, 7.0, "High"},
		{"CVE-2099-0002", []string{cveagent.ToolFetchCVE, cveagent.ToolFetchCVSS, cveagent.ToolScoreCVSS}, 0, "None"},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			g, opts := setup(t, nil)
			out, err := g.Invoke(t.Context(), cveagent.Input(tc.id), opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolCalls(out.Messages); !slices.Equal(got, tc.calls) {
				t.Fatalf("tool calls %v, want %v", got, tc.calls)
			}
			if out.Decision != cveagent.DecisionAuto || out.Published == nil || out.Published.Score != tc.score || out.Published.Severity != tc.severity {
				t.Fatalf("out %+v", out)
			}
		})
	}
}

// An unknown CVE: the tool's error goes back to the model, which says it
// could not fetch it, and assess fails clearly.
func TestUnknownCVEIsAClearError(t *testing.T) {
	t.Parallel()
	g, opts := setup(t, nil)
	_, err := g.Invoke(t.Context(), cveagent.Input("CVE-2000-0001"), opts)
	if !errors.Is(err, cveagent.ErrNotScored) || !strings.Contains(err.Error(), "could not fetch") {
		t.Fatalf("err = %v", err)
	}
	s, _ := stateOf(t, g, opts.ThreadID)
	var errorResults int
	for _, m := range s.Messages {
		if m.Type == models.TypeTool && m.Status == models.StatusError && strings.Contains(m.Text(), cveassessment.ErrUnknownCVE.Error()) {
			errorResults++
		}
	}
	if errorResults != 2 {
		t.Fatalf("want the two failed fetches in the conversation, got %+v", s.Messages)
	}
}

func TestBadCVEIDIsRefused(t *testing.T) {
	t.Parallel()
	g, opts := setup(t, nil)
	if _, err := g.Invoke(t.Context(), cveagent.Input("log4shell"), opts); err == nil || !strings.Contains(err.Error(), "CVE-YYYY-NNNN") {
		t.Fatalf("err = %v", err)
	}
}

// The "messages" stream carries the agent's tokens as they come, from
// inside the agent subgraph (RunOptions.Subgraphs), each reply's chunks
// under the id the stored reply keeps.
func TestMessagesStreamShowsTheAgentsTokens(t *testing.T) {
	t.Parallel()
	g, opts := setup(t, nil)
	o := *opts
	o.Subgraphs = true
	texts := map[string]string{} // reply id → streamed text
	var chunks int
	for part, err := range g.Stream(t.Context(), cveagent.Input("CVE-2014-0160"), &o, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		pair := part.Data.([]any)
		msg, md := pair[0].(models.Message), pair[1].(map[string]any)
		if msg.Type != "AIMessageChunk" {
			continue // a message a node returned without streaming it (the question, tool results)
		}
		if len(part.Namespace) != 1 || !strings.HasPrefix(part.Namespace[0], cveagent.NodeAnalyst+":") {
			t.Fatalf("a chunk from namespace %v", part.Namespace)
		}
		if md["ls_provider"] != modelenv.OfflineProvider || md["langgraph_node"] != "agent" {
			t.Fatalf("metadata %v", md)
		}
		if msg.Text() != "" {
			chunks++
			texts[msg.ID] += msg.Text()
		}
	}
	s, _ := stateOf(t, g, opts.ThreadID)
	final := s.Messages[len(s.Messages)-1]
	if final.Type != models.TypeAI || texts[final.ID] != final.Text() || chunks < 10 {
		t.Fatalf("%d chunks %v; final reply %q (%s)", chunks, texts, final.Text(), final.ID)
	}
}

// The same loop through each real SDK over HTTP, against the double with
// Respond, and through modelenv with a key set (the real-provider
// branch, pointed at the double).
func TestLoopThroughEachProvider(t *testing.T) {
	t.Parallel()
	s, ts := localprovider.NewTestServer(localprovider.Config{Respond: cveagent.Respond})
	t.Cleanup(ts.Close)
	keys := map[string]string{"anthropic": "k-anthropic", "openai": "k-openai", "modelenv with a key": "k-env"}
	build := map[string]func() (models.ChatModel, error){
		"anthropic": func() (models.ChatModel, error) {
			return anthropic.New(anthropic.Config{APIKey: "k-anthropic", BaseURL: ts.URL, Model: "claude-test"})
		},
		"openai": func() (models.ChatModel, error) {
			return openai.New(openai.Config{APIKey: "k-openai", BaseURL: ts.URL + "/v1/", Model: "gpt-test"})
		},
		"modelenv with a key": func() (models.ChatModel, error) {
			vars := map[string]string{modelenv.EnvAnthropicKey: "k-env", modelenv.EnvAnthropicBase: ts.URL}
			return modelenv.Load(modelenv.Config{Getenv: func(k string) string { return vars[k] }})
		},
	}
	for name, newModel := range build {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := newModel()
			if err != nil {
				t.Fatal(err)
			}
			g, opts := setup(t, m)
			runToReview(t, g, opts)
			out, err := g.Invoke(t.Context(), engine.Command{Resume: true}, opts)
			if err != nil || out.Published == nil || out.Published.Severity != "Critical" {
				t.Fatalf("out %+v, %v", out, err)
			}
			for _, msg := range out.Messages {
				if _, off := msg.ResponseMetadata["offline"]; off {
					t.Fatalf("a real provider's reply marked offline: %+v", msg)
				}
			}
			var n int
			for _, r := range s.Requests() {
				if r.Key == localprovider.Fingerprint(keys[name]) {
					n++
				}
			}
			if n != 3 {
				t.Fatalf("%d requests with this key, want 3", n)
			}
		})
	}
}

func ExampleNew() {
	g, err := cveagent.New(cveagent.Options{Checkpointer: checkpoints.NewMemory()}) // the offline model
	if err != nil {
		panic(err)
	}
	opts := &engine.RunOptions{ThreadID: "example"}
	_, err = g.Invoke(context.Background(), cveagent.Input("CVE-2021-44228"), opts)
	fmt.Println(errors.As(err, new(*engine.Interrupted)))
	out, err := g.Invoke(context.Background(), engine.Command{Resume: map[string]any{"action": "approve"}}, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Published.Score, out.Published.Severity, out.Decision)
	// Output:
	// true
	// 10 Critical approved
}

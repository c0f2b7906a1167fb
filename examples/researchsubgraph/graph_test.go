package researchsubgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
)

const compareQuestion = "Compare Postgres and SQLite for a multi-user web app"

// counting wraps the model and the library to count the calls a replay
// must not repeat.
type counting struct {
	modelCalls  atomic.Int32
	searchCalls atomic.Int32
}

func (c *counting) Complete(ctx context.Context, prompt string) (string, error) {
	c.modelCalls.Add(1)
	return researchsubgraph.ScriptedModel{}.Complete(ctx, prompt)
}

func (c *counting) Search(ctx context.Context, query string, limit int) ([]researchsubgraph.Document, error) {
	c.searchCalls.Add(1)
	return researchsubgraph.DefaultLibrary.Search(ctx, query, limit)
}

type setup struct {
	calls *counting
	graph *engine.Graph[researchsubgraph.State]

	mu      sync.Mutex
	started map[string]int // TaskStarted events per node, subgraph included
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	s := &setup{calls: &counting{}, started: map[string]int{}}
	var err error
	s.graph, err = researchsubgraph.New(researchsubgraph.Options{Model: s.calls, Searcher: s.calls, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *setup) listen(e engine.Event) {
	if ts, ok := e.(engine.TaskStarted); ok {
		s.mu.Lock()
		s.started[ts.Task.Name]++
		s.mu.Unlock()
	}
}

func (s *setup) runs(node string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[node]
}

// run starts or resumes the thread; it returns the final state, or the
// pending review.
func (s *setup) run(t *testing.T, input any, opts engine.RunOptions) (researchsubgraph.State, *engine.Interruption) {
	t.Helper()
	if opts.ThreadID == "" {
		opts.ThreadID = "t1"
	}
	opts.Listener = s.listen
	out, err := s.graph.Invoke(context.Background(), input, &opts)
	var intr *engine.Interrupted
	if errors.As(err, &intr) {
		if len(intr.Interrupts) != 1 {
			t.Fatalf("%d interrupts, want 1: %+v", len(intr.Interrupts), intr.Interrupts)
		}
		return out, &intr.Interrupts[0]
	}
	if err != nil {
		t.Fatalf("run %v: %v", input, err)
	}
	return out, nil
}

func decodeReview(t *testing.T, v any) researchsubgraph.Review {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var r researchsubgraph.Review
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("interrupt payload %s is not a Review: %v", b, err)
	}
	return r
}

func findingIDs(fs []researchsubgraph.Finding) []string {
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.ID
	}
	return ids
}

var compareFindings = []string{"pg-mvcc", "pg-ops", "sqlite-wal", "sqlite-embed"}

func TestQuickQuestionsAreAnsweredDirectly(t *testing.T) {
	t.Parallel()
	cases := []struct{ question, answer string }{
		{"Which port does Postgres listen on?", "Postgres listens on port 5432 by default."},
		{"Does SQLite need a server?", "No: SQLite runs inside the application, with no server."},
		{"What is the capital of Peru?", "I don't know that offhand; ask me to compare the options and I will research it."},
	}
	for _, tc := range cases {
		t.Run(tc.question, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			out, intr := s.run(t, researchsubgraph.Input(tc.question), engine.RunOptions{})
			if intr != nil {
				t.Fatalf("a quick question was sent to review: %+v", intr)
			}
			if out.Route != researchsubgraph.RouteQuick || out.Answer != tc.answer || len(out.Sources) != 0 {
				t.Fatalf("state = %+v", out)
			}
			if n := s.runs(researchsubgraph.NodeResearch) + s.runs(researchsubgraph.NodePlan); n != 0 {
				t.Fatalf("research ran for a quick question (%d tasks)", n)
			}
			if n := s.calls.searchCalls.Load(); n != 0 {
				t.Fatalf("%d searches for a quick question", n)
			}
		})
	}
}

// The quick path needs no checkpointer.
func TestQuickPathWithoutCheckpointer(t *testing.T) {
	t.Parallel()
	g, err := researchsubgraph.New(researchsubgraph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(context.Background(), researchsubgraph.Input("Which port does Postgres listen on?"), nil)
	if err != nil || !strings.Contains(out.Answer, "5432") {
		t.Fatalf("run = %+v, %v", out, err)
	}
}

// The review inside the subgraph stops the parent; resuming the parent,
// with a plain value or by the interrupt's id, reaches it.
func TestResearchInterruptsInsideTheSubgraphAndResumes(t *testing.T) {
	t.Parallel()
	for _, byID := range []bool{false, true} {
		name := "by value"
		if byID {
			name = "by id"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			out, intr := s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{})
			if intr == nil {
				t.Fatalf("research finished without review: %+v", out)
			}
			if intr.Node != researchsubgraph.NodeReview || !strings.HasPrefix(intr.Namespace, researchsubgraph.NodeResearch+":") {
				t.Fatalf("interrupt at node %q namespace %q, want review inside research:<task id>", intr.Node, intr.Namespace)
			}
			r := decodeReview(t, intr.Value)
			if got := findingIDs(r.Findings); !slices.Equal(got, compareFindings) {
				t.Fatalf("findings = %v, want %v", got, compareFindings)
			}
			if !strings.Contains(r.Question, "4 findings") || r.Problem != "" {
				t.Fatalf("review = %+v", r)
			}

			var answer any = "Yes."
			if byID {
				answer = map[string]any{intr.ID: "yes"}
			}
			out, intr = s.run(t, engine.Command{Resume: answer}, engine.RunOptions{})
			if intr != nil {
				t.Fatalf("asked again after yes: %+v", intr)
			}
			if out.Route != researchsubgraph.RouteResearch || !slices.Equal(out.Sources, compareFindings) {
				t.Fatalf("state = %+v", out)
			}
			for _, id := range compareFindings {
				if !strings.Contains(out.Answer, "["+id+"]") {
					t.Errorf("answer %q does not cite %s", out.Answer, id)
				}
			}
			if s.runs(researchsubgraph.NodePlan) != 1 || s.calls.searchCalls.Load() != 2 {
				t.Fatalf("plan ran %d times and searched %d times; the resume restarted the subgraph", s.runs(researchsubgraph.NodePlan), s.calls.searchCalls.Load())
			}
		})
	}
}

func TestSubgraphStateAtTheInterrupt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSetup(t)
	_, intr := s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{})
	if intr == nil {
		t.Fatal("no review")
	}
	st, err := s.graph.GetStateWith(ctx, checkpoints.Config{ThreadID: "t1"}, engine.StateOptions{Subgraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Next, []string{researchsubgraph.NodeResearch}) || st.Values["route"] != researchsubgraph.RouteResearch {
		t.Fatalf("parent: next %v, values %v", st.Next, st.Values)
	}
	if _, ok := st.Values["findings"]; ok {
		t.Fatal("the subgraph's findings leaked into the parent's state")
	}
	if len(st.Interrupts) != 1 || st.Interrupts[0].ID != intr.ID {
		t.Fatalf("parent interrupts = %+v, want the review's", st.Interrupts)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].Name != researchsubgraph.NodeResearch || st.Tasks[0].Subgraph == nil || st.Tasks[0].Subgraph.Namespace != intr.Namespace {
		t.Fatalf("parent tasks = %+v", st.Tasks)
	}
	inner := st.Tasks[0].State
	if inner == nil {
		t.Fatal("no subgraph state with Subgraphs: true")
	}
	if !slices.Equal(inner.Next, []string{researchsubgraph.NodeReview}) {
		t.Fatalf("subgraph next = %v, want [review]", inner.Next)
	}
	if q, _ := inner.Values["queries"].([]string); !slices.Equal(q, []string{"Postgres", "SQLite"}) {
		t.Fatalf("subgraph queries = %v", inner.Values["queries"])
	}
	if f, _ := inner.Values["findings"].([]researchsubgraph.Finding); !slices.Equal(findingIDs(f), compareFindings) {
		t.Fatalf("subgraph findings = %v", inner.Values["findings"])
	}
	if len(inner.Interrupts) != 1 || inner.Interrupts[0].Node != researchsubgraph.NodeReview {
		t.Fatalf("subgraph interrupts = %+v", inner.Interrupts)
	}
	if r := decodeReview(t, inner.Interrupts[0].Value); !slices.Equal(findingIDs(r.Findings), compareFindings) {
		t.Fatalf("stored review payload = %+v", r)
	}
	if inner.Metadata.Parents[""] != st.Config.CheckpointID {
		t.Fatalf("subgraph checkpoint's parents = %v, want the parent's checkpoint %s", inner.Metadata.Parents, st.Config.CheckpointID)
	}
}

// Replaying the parent from the interrupted checkpoint forks the thread;
// the subgraph's plan and findings come along, so plan and search do not
// run (or call the model and the library) again, and the review asks
// again on the new branch.
func TestReplayKeepsTheSubgraphsWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSetup(t)
	if _, intr := s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{}); intr == nil {
		t.Fatal("no review")
	}
	models, searches := s.calls.modelCalls.Load(), s.calls.searchCalls.Load()
	if models != 2 || searches != 2 { // classify + plan; one search per product
		t.Fatalf("first run: %d model calls, %d searches", models, searches)
	}
	head, err := s.graph.GetState(ctx, checkpoints.Config{ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}

	_, intr := s.run(t, nil, engine.RunOptions{CheckpointID: head.Config.CheckpointID})
	if intr == nil {
		t.Fatal("the replay did not stop at the review")
	}
	if r := decodeReview(t, intr.Value); !slices.Equal(findingIDs(r.Findings), compareFindings) {
		t.Fatalf("review on the replayed branch = %+v", r)
	}
	if s.runs(researchsubgraph.NodePlan) != 1 || s.runs(researchsubgraph.NodeSearch) != 1 || s.runs(researchsubgraph.NodeClassify) != 1 {
		t.Fatalf("after the replay classify, plan, search ran %d, %d, %d times; want once each",
			s.runs(researchsubgraph.NodeClassify), s.runs(researchsubgraph.NodePlan), s.runs(researchsubgraph.NodeSearch))
	}
	if m, n := s.calls.modelCalls.Load(), s.calls.searchCalls.Load(); m != models || n != searches {
		t.Fatalf("the replay called the model %d and the library %d more times", m-models, n-searches)
	}

	out, intr := s.run(t, engine.Command{Resume: "yes"}, engine.RunOptions{})
	if intr != nil || !slices.Equal(out.Sources, compareFindings) {
		t.Fatalf("resume on the replayed branch = %+v, %+v", out, intr)
	}
	if m := s.calls.modelCalls.Load(); m != models+1 { // summarise only
		t.Fatalf("%d model calls after the resume, want %d", m, models+1)
	}
}

// A follow-up query instead of yes sends the subgraph back to search, and
// the review asks again with the new findings.
func TestFollowUpSearch(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{})
	_, intr := s.run(t, engine.Command{Resume: "pgvector"}, engine.RunOptions{})
	if intr == nil {
		t.Fatal("a follow-up did not lead to a second review")
	}
	want := append(slices.Clone(compareFindings), "pgvector")
	r := decodeReview(t, intr.Value)
	if got := findingIDs(r.Findings); !slices.Equal(got, want) {
		t.Fatalf("findings after the follow-up = %v, want %v", got, want)
	}
	if r.Findings[len(r.Findings)-1].Query != "pgvector" {
		t.Fatalf("the new finding records query %q", r.Findings[len(r.Findings)-1].Query)
	}
	if n := s.calls.searchCalls.Load(); n != 3 {
		t.Fatalf("%d searches, want 3: only the follow-up is searched again", n)
	}
	out, intr := s.run(t, engine.Command{Resume: true}, engine.RunOptions{})
	if intr != nil || !slices.Equal(out.Sources, want) || !strings.Contains(out.Answer, "[pgvector]") {
		t.Fatalf("final = %+v, %+v", out, intr)
	}
}

// An answer the review cannot use is asked again with the reason.
func TestReviewRejectsUnusableAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer any
		reason string
	}{
		{"a number", 42, "invalid answer: want yes or a search query (a string), got float64"},
		{"blank", "  ", "invalid answer: it is empty"},
		{"false", false, "invalid answer: false does not say what else to search for"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t)
			_, first := s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{})
			_, again := s.run(t, engine.Command{Resume: tc.answer}, engine.RunOptions{})
			if again == nil {
				t.Fatalf("answer %v was accepted", tc.answer)
			}
			if r := decodeReview(t, again.Value); !strings.HasPrefix(r.Problem, tc.reason) || len(r.Findings) != len(compareFindings) {
				t.Fatalf("review = %+v, want problem %q", r, tc.reason)
			}
			if again.ID == first.ID || again.Namespace != first.Namespace {
				t.Fatalf("second ask %+v vs first %+v: want a new id in the same subgraph task", again, first)
			}
			out, intr := s.run(t, engine.Command{Resume: "ok"}, engine.RunOptions{})
			if intr != nil || out.Answer == "" {
				t.Fatalf("ok after an unusable answer = %+v, %+v", out, intr)
			}
		})
	}
}

func TestNoQuestion(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	_, err := s.graph.Invoke(context.Background(), researchsubgraph.Input(" "), &engine.RunOptions{ThreadID: "t1"})
	if !errors.Is(err, researchsubgraph.ErrNoQuestion) {
		t.Fatalf("error %v, want ErrNoQuestion", err)
	}
}

// A new question on a thread that already answered one is answered from
// scratch: the previous research's sources do not stick.
func TestSecondQuestionOnTheThread(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.run(t, researchsubgraph.Input(compareQuestion), engine.RunOptions{})
	if out, _ := s.run(t, engine.Command{Resume: "yes"}, engine.RunOptions{}); len(out.Sources) == 0 {
		t.Fatal("no sources for the research")
	}
	out, intr := s.run(t, researchsubgraph.Input("Which port does Postgres listen on?"), engine.RunOptions{})
	if intr != nil || out.Route != researchsubgraph.RouteQuick || len(out.Sources) != 0 || !strings.Contains(out.Answer, "5432") {
		t.Fatalf("second question = %+v, %+v", out, intr)
	}
}

func TestResearchSubgraphRunsStandalone(t *testing.T) {
	t.Parallel()
	g, err := researchsubgraph.NewResearch(researchsubgraph.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opts := &engine.RunOptions{ThreadID: "solo"}
	if _, err := g.Invoke(ctx, researchsubgraph.Input("Should we use pgvector?"), opts); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("standalone research: %v, want the review", err)
	}
	out, err := g.Invoke(ctx, engine.Command{Resume: "yes"}, opts)
	if err != nil || !slices.Equal(out.Queries, []string{"pgvector"}) || out.Sources[0] != "pgvector" || !out.Approved {
		t.Fatalf("standalone = %+v, %v", out, err)
	}
}

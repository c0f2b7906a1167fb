package mapreduce_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/mapreduce"
)

const report = `# Incident 4411: checkout outage

Checkout failed for 38 minutes on Tuesday. Card payments were declined.

## Timeline
The deploy started at 14:02. Errors rose within a minute.

## Root cause
A connection pool was sized for the old replica count. It ran dry under load.

## Impact
About 2,100 orders failed. Most customers retried successfully.

## Follow-up
Pool sizes now derive from the replica count. An alert fires at 80% use.
`

// wantSummaries are the sections' first sentences, in document order.
var wantSummaries = []mapreduce.Summary{
	{Index: 0, Heading: "Introduction", Text: "Checkout failed for 38 minutes on Tuesday."},
	{Index: 1, Heading: "Timeline", Text: "The deploy started at 14:02."},
	{Index: 2, Heading: "Root cause", Text: "A connection pool was sized for the old replica count."},
	{Index: 3, Heading: "Impact", Text: "About 2,100 orders failed."},
	{Index: 4, Heading: "Follow-up", Text: "Pool sizes now derive from the replica count."},
}

// reversingModel makes the workers finish in reverse Send order: the
// worker for section i answers only after section i+1's task has finished
// (the listener opens its gate), and the last section goes first.
type reversingModel struct {
	inner *mapreduce.ScriptedModel
	gates map[string]chan struct{} // by heading

	mu       sync.Mutex
	finished []int // section indexes in completion order
}

func newReversingModel(sections []mapreduce.Summary) *reversingModel {
	m := &reversingModel{inner: mapreduce.NewScriptedModel(), gates: map[string]chan struct{}{}}
	for _, s := range sections {
		m.gates[s.Heading] = make(chan struct{})
	}
	close(m.gates[sections[len(sections)-1].Heading])
	return m
}

func (m *reversingModel) Complete(ctx context.Context, prompt string) (string, error) {
	for heading, gate := range m.gates {
		if strings.Contains(prompt, "Heading: "+heading+"\n") {
			select {
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
	}
	return m.inner.Complete(ctx, prompt)
}

func (m *reversingModel) listen(e engine.Event) {
	f, ok := e.(engine.TaskFinished)
	if !ok || f.Task.Name != mapreduce.NodeSummarise {
		return
	}
	sec := f.Task.Input.(mapreduce.Section)
	m.mu.Lock()
	m.finished = append(m.finished, sec.Index)
	m.mu.Unlock()
	if sec.Index > 0 {
		close(m.gates[wantSummaries[sec.Index-1].Heading])
	}
}

func TestAggregateFollowsSendOrderNotCompletionOrder(t *testing.T) {
	t.Parallel()
	model := newReversingModel(wantSummaries)
	g, err := mapreduce.New(mapreduce.Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(context.Background(), mapreduce.Input(report), &engine.RunOptions{Listener: model.listen})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{4, 3, 2, 1, 0}; !reflect.DeepEqual(model.finished, want) {
		t.Fatalf("workers finished in order %v, want %v (the test must force reverse completion)", model.finished, want)
	}
	if !reflect.DeepEqual(out.Summaries, wantSummaries) {
		t.Fatalf("summaries = %+v\nwant %+v", out.Summaries, wantSummaries)
	}
	wantDigest := "- Introduction: Checkout failed for 38 minutes on Tuesday.\n" +
		"- Timeline: The deploy started at 14:02.\n" +
		"- Root cause: A connection pool was sized for the old replica count.\n" +
		"- Impact: About 2,100 orders failed.\n" +
		"- Follow-up: Pool sizes now derive from the replica count.\n"
	if out.Digest != wantDigest {
		t.Fatalf("digest =\n%s\nwant\n%s", out.Digest, wantDigest)
	}
}

// One superstep holds every worker, as push tasks indexed in Send order;
// combine then runs once.
func TestWorkersRunInOneSuperstepAndCombineOnce(t *testing.T) {
	t.Parallel()
	model := mapreduce.NewScriptedModel()
	g, err := mapreduce.New(mapreduce.Options{Model: model})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var planned []engine.StepPlanned
	combines := 0
	listen := func(e engine.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch x := e.(type) {
		case engine.StepPlanned:
			planned = append(planned, x)
		case engine.TaskStarted:
			if x.Task.Name == mapreduce.NodeCombine {
				combines++
			}
		}
	}
	if _, err := g.Invoke(context.Background(), mapreduce.Input(report), &engine.RunOptions{Listener: listen}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var workerSteps []int
	for _, p := range planned {
		var idx []int
		for _, task := range p.Tasks {
			if task.Name == mapreduce.NodeSummarise {
				idx = append(idx, task.Index)
			}
		}
		if len(idx) > 0 {
			workerSteps = append(workerSteps, p.Step)
			if want := []int{0, 1, 2, 3, 4}; !reflect.DeepEqual(idx, want) {
				t.Fatalf("step %d plans summarise tasks with Send indexes %v, want %v", p.Step, idx, want)
			}
		}
	}
	if len(workerSteps) != 1 {
		t.Fatalf("summarise tasks were planned in steps %v, want one step", workerSteps)
	}
	if combines != 1 {
		t.Fatalf("combine ran %d times, want once", combines)
	}
	if model.Calls() != len(wantSummaries) {
		t.Fatalf("model answered %d prompts, want one per section (%d)", model.Calls(), len(wantSummaries))
	}
}

func TestPlanSplitsAtHeadings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		doc      string
		headings []string
	}{
		{"title and intro", "# T\n\nIntro text.\n## A\nAlpha.\n", []string{"Introduction", "A"}},
		{"no intro", "## A\nAlpha.\n## B\nBeta.\n", []string{"A", "B"}},
		{"no headings", "Just one paragraph. Two sentences.", []string{"Introduction"}},
		{"empty section dropped", "## A\n\n## B\nBeta.\n", []string{"B"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := mapreduce.New(mapreduce.Options{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.Invoke(context.Background(), mapreduce.Input(tc.doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, s := range out.Sections {
				if s.Index != i {
					t.Fatalf("section %q has index %d, want %d", s.Heading, s.Index, i)
				}
				got = append(got, s.Heading)
			}
			if !reflect.DeepEqual(got, tc.headings) {
				t.Fatalf("sections %v, want %v", got, tc.headings)
			}
			if len(out.Summaries) != len(tc.headings) {
				t.Fatalf("%d summaries for %d sections", len(out.Summaries), len(tc.headings))
			}
		})
	}
}

func TestEmptyDocumentIsRejected(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "  \n", "# Title only\n## A\n\n"} {
		g, err := mapreduce.New(mapreduce.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = g.Invoke(context.Background(), mapreduce.Input(doc), nil)
		if !errors.Is(err, mapreduce.ErrEmptyDocument) {
			t.Fatalf("document %q: error %v, want ErrEmptyDocument", doc, err)
		}
	}
}

// Sends are checkpointed as JSON; with a saver the workers still receive
// typed Sections and the result is the same.
func TestCheckpointedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver := checkpoints.NewMemory()
	g, err := mapreduce.New(mapreduce.Options{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	out, err := g.Invoke(ctx, mapreduce.Input(report), &engine.RunOptions{ThreadID: "digest-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Summaries, wantSummaries) {
		t.Fatalf("summaries = %+v, want %+v", out.Summaries, wantSummaries)
	}
	snap, err := g.GetState(ctx, checkpoints.Config{ThreadID: "digest-1"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Values["digest"] != out.Digest {
		t.Fatalf("checkpointed digest %q, run returned %q", snap.Values["digest"], out.Digest)
	}
}

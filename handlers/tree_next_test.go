package handlers_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

type sendLoopState struct {
	N    int   `json:"n"`
	Done []int `json:"done" reduce:"append"`
}

// sendLoopGraph runs fan 25 times; each of its first 24 runs sends two
// tasks to work, which lead back to fan.
func sendLoopGraph(t testing.TB, saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[sendLoopState]()
	sg.AddNode("fan", func(_ context.Context, s sendLoopState) (engine.Output, error) {
		return engine.Set("n", s.N+1), nil
	}, engine.SendTargets("work"))
	engine.AddNodeFunc(sg, "work", func(_ context.Context, x int) (engine.Output, error) {
		return engine.Set("done", x), nil
	})
	sg.AddEdge(engine.Start, "fan").AddEdge("work", "fan")
	sg.AddConditionalEdges("fan", func(_ context.Context, s sendLoopState) (engine.Route, error) {
		if s.N >= 25 {
			return engine.To(engine.End), nil
		}
		return engine.SendTo(engine.Send{Node: "work", Arg: 1}, engine.Send{Node: "work", Arg: 2}), nil
	}, nil)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// nextColumn is the tree page's next column, one cell per row.
func nextColumn(t *testing.T, f *fixture, thread string) []string {
	t.Helper()
	res := f.get(t, "/threads/"+thread+"/checkpoints")
	if res.code != http.StatusOK {
		t.Fatalf("tree = %d: %s", res.code, res.body)
	}
	var cells []string
	for _, m := range regexp.MustCompile(`(?s)<td class="next">(.*?)</td>`).FindAllStringSubmatch(res.body, -1) {
		cells = append(cells, strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")), " "))
	}
	return cells
}

// Every tree row lists its checkpoint's next tasks exactly, Send tasks
// included, in a Studio that did not watch the run (restarted) as in
// the one that did: the tasks are saved with each checkpoint, so no row
// of a long thread says "+ sends" for want of loading its state.
func TestTreeListsEverySendTaskAfterARestart(t *testing.T) {
	t.Parallel()
	saver := checkpoints.NewMemory()
	threads, log := runs.NewMemoryThreads(), runs.NewMemoryRunLog()
	graph := map[string]engine.Compiled{"sends": sendLoopGraph(t, saver)}
	live := serve(t, graph, runs.WithThreadStore(threads), runs.WithRunLog(log))
	if _, err := live.runs.Start(context.Background(), "sends", "loop", map[string]any{"n": 0}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := live.wait(t, "loop"); th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("run: %+v", th)
	}
	watched := nextColumn(t, live, "loop")
	restarted := serve(t, graph, runs.WithThreadStore(threads), runs.WithRunLog(log))
	reloaded := nextColumn(t, restarted, "loop")
	if strings.Join(reloaded, "|") != strings.Join(watched, "|") {
		t.Fatalf("next column after a restart:\n%q\nwhile watching:\n%q", reloaded, watched)
	}
	sends := 0
	for _, c := range reloaded {
		if strings.Contains(c, "+ sends") {
			t.Fatalf("a row says %q: its Send tasks are not listed", c)
		}
		if c == "work, work" {
			sends++
		}
	}
	if sends != 24 {
		t.Fatalf("%d rows list the two Send tasks, want 24: %q", sends, reloaded)
	}
}

// olderSaver saves checkpoints as a version before Checkpoint.Next did:
// without their next tasks (and only through Put, as maps).
type olderSaver struct{ checkpoints.Saver }

func (s olderSaver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	cp.Next = nil
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// A thread whose checkpoints were saved without their next tasks still
// has them listed: from the live events in the Studio that watched the
// run, Sends included, and inferred from the versions otherwise.
func TestTreeListsNextTasksOfCheckpointsSavedWithoutThem(t *testing.T) {
	t.Parallel()
	saver := olderSaver{checkpoints.NewMemory()}
	f := serve(t, map[string]engine.Compiled{"sends": sendLoopGraph(t, saver)})
	if _, err := f.runs.Start(context.Background(), "sends", "loop", map[string]any{"n": 0}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := f.wait(t, "loop"); th.Status != runs.StatusIdle || th.Error != "" {
		t.Fatalf("run: %+v", th)
	}
	if tu, err := saver.Get(context.Background(), checkpoints.Config{ThreadID: "loop"}); err != nil || tu.Checkpoint.Next != nil {
		t.Fatalf("head saved with next tasks %v (%v): the test needs checkpoints without", tu.Checkpoint.Next, err)
	}
	cells := nextColumn(t, f, "loop")
	sends, fans := 0, 0
	for _, c := range cells {
		switch c {
		case "work, work":
			sends++
		case "fan":
			fans++
		}
	}
	if sends != 24 || fans != 25 {
		t.Fatalf("%d rows list the two Send tasks (want 24), %d list fan (want 25): %q", sends, fans, cells)
	}
}

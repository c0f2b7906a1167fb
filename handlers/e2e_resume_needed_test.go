package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// dropsStepCheckpoint is a saver that fails the Put of the checkpoint of
// one step while armed, as a process killed after the step's tasks saved
// their writes and before the step's checkpoint. Only the Saver methods
// are exposed, so the engine saves writes one task at a time.
type dropsStepCheckpoint struct {
	checkpoints.Saver
	armed *bool
}

func (s dropsStepCheckpoint) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, nv map[string]int64) (checkpoints.Config, error) {
	if *s.armed && md.Step == 1 && md.Source == checkpoints.SourceLoop {
		return checkpoints.Config{}, errors.New("killed before the step's checkpoint")
	}
	return s.Saver.Put(ctx, cfg, cp, md, nv)
}

// A Studio died after every task of a step saved its writes but before
// the step's checkpoint: the head lists no next task. The next Studio
// shows the thread as "resume needed", not finished, and continuing it
// from the page applies the writes and finishes the run.
func TestE2EResumeNeededAfterACrashBetweenWritesAndCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	armed := true
	saver := dropsStepCheckpoint{Saver: checkpoints.NewMemory(), armed: &armed}
	sg := engine.NewStateGraph[flowState]()
	for _, n := range []string{"a", "b", "c"} {
		sg.AddNode(n, func(context.Context, flowState) (engine.Output, error) { return engine.Update{"log": n}, nil })
	}
	sg.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b").AddEdge("a", "c").AddEdge("b", "c")
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	store := runs.NewMemoryThreads()
	m1, err := runs.NewManager(map[string]engine.Compiled{"fan": g}, runs.WithThreadStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m1.Start(ctx, "fan", "crashed", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := m1.Wait(ctx, "crashed")
	if err != nil || th.Status != runs.StatusError {
		t.Fatalf("first run: %+v, %v", th, err)
	}
	m1.Close()
	armed = false
	// What the registry holds had the process died instead: running, by
	// an owner long silent.
	rec, err := store.GetThread(ctx, "crashed")
	if err != nil {
		t.Fatal(err)
	}
	rec.Status, rec.Error, rec.Owner = runs.StatusRunning, "", "dead"
	if err := store.Heartbeat(ctx, "dead", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := store.SaveThread(ctx, rec); err != nil {
		t.Fatal(err)
	}
	m2, err := runs.NewManager(map[string]engine.Compiled{"fan": g}, runs.WithThreadStore(store))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m2}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() { srv.Close(); m2.Close() })

	bctx := e2e.Browser(t)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/threads/crashed")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, bctx, "the resume-needed notice", `#resume-needed`)
	text, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("resume-needed")))
	if err != nil || !strings.Contains(text, "Resume needed") {
		t.Fatalf("notice %q, %v", text, err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.ID("resume-needed-go"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, bctx, "the thread finished", `body[data-status="idle"]`)
	st, err := g.Pregel().GetState(ctx, checkpoints.Config{ThreadID: "crashed"})
	if err != nil || fmt.Sprint(st.Values["log"]) != "[a b c]" || len(st.Next) != 0 || st.WritesPending {
		t.Fatalf("after continuing: %+v, %v", st, err)
	}
	if err := chromedp.Do(bctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#resume-needed").length`)); err != nil || n != 0 {
		t.Fatalf("the notice is still there after the run finished (%v, %v)", n, err)
	}
}

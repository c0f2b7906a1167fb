package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type reviewParent struct {
	Request  string `json:"request"`
	Decision string `json:"decision"`
}

type reviewChild struct {
	Request  string `json:"request"`
	Draft    string `json:"draft"`
	Decision string `json:"decision"`
}

// reviewGraph: START → review (a subgraph: write → ask, which interrupts)
// → done. The subgraph has a key of its own, draft, that the parent's
// state does not have.
func reviewGraph(t *testing.T) *engine.Graph[reviewParent] {
	t.Helper()
	inner := engine.NewStateGraph[reviewChild]()
	inner.AddNode("write", func(_ context.Context, s reviewChild) (engine.Output, error) {
		return engine.Update{"draft": "draft of " + s.Request}, nil
	})
	inner.AddNode("ask", func(ctx context.Context, s reviewChild) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, "approve "+s.Draft+"?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"decision": a}, nil
	})
	inner.AddEdge(engine.Start, "write").AddEdge("write", "ask")
	sub, err := inner.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outer := engine.NewStateGraph[reviewParent]()
	outer.AddSubgraph("review", sub)
	outer.AddNode("done", func(_ context.Context, s reviewParent) (engine.Output, error) {
		return engine.Update{"decision": s.Decision + "!"}, nil
	})
	outer.AddEdge(engine.Start, "review").AddEdge("review", "done")
	g, err := outer.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var allModes = []engine.StreamMode{engine.StreamValues, engine.StreamUpdates, engine.StreamTasks, engine.StreamCheckpoints, engine.StreamDebug}

func streamAll(t *testing.T, g *engine.Graph[reviewParent], in any, opts *engine.RunOptions) []engine.StreamPart {
	t.Helper()
	var parts []engine.StreamPart
	for part, err := range g.Stream(context.Background(), in, opts, allModes...) {
		if err != nil && !strings.Contains(err.Error(), "interrupt") {
			t.Fatal(err)
		}
		if err == nil {
			parts = append(parts, part)
		}
	}
	return parts
}

// Issue 13 item 3: a subgraph's parts do not leak into the root stream.
// Without Subgraphs only the root graph's parts come, its values never
// hold the subgraph's own keys, and its checkpoints are the root's own
// (the ones GetStateHistory lists, with the root's steps); with
// Subgraphs, the subgraph's parts come too, each under its namespace.
func TestSubgraphPartsStayInTheirNamespace(t *testing.T) {
	t.Parallel()
	g := reviewGraph(t)
	ctx := context.Background()
	parts := streamAll(t, g, engine.Update{"request": "refund"}, &engine.RunOptions{ThreadID: "root-only"})
	hist, err := g.GetStateHistory(ctx, checkpoints.Config{ThreadID: "root-only"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rootIDs := map[string]bool{}
	for _, h := range hist {
		rootIDs[h.Config.CheckpointID] = true
	}
	var sawInterrupt bool
	for _, p := range parts {
		if len(p.Namespace) != 0 {
			t.Fatalf("%s part from namespace %v without Subgraphs: %v", p.Mode, p.Namespace, p.Data)
		}
		m, _ := p.Data.(map[string]any)
		switch p.Mode {
		case engine.StreamValues:
			if _, ok := m["draft"]; ok {
				t.Fatalf("root values hold the subgraph's key: %v", m)
			}
			if _, ok := m["__interrupt__"]; ok {
				sawInterrupt = true
			}
		case engine.StreamCheckpoints:
			id := m["config"].(map[string]any)["configurable"].(map[string]any)["checkpoint_id"].(string)
			if !rootIDs[id] {
				t.Fatalf("checkpoints part %s is not one of the root's checkpoints", id)
			}
		case engine.StreamUpdates, engine.StreamTasks:
			if name, _ := m["name"].(string); name == "write" || name == "ask" {
				t.Fatalf("root %s part from a subgraph node: %v", p.Mode, m)
			}
			if _, ok := m["draft"]; ok {
				t.Fatalf("root updates from a subgraph node: %v", m)
			}
		}
	}
	if !sawInterrupt {
		t.Fatalf("the root values never showed the interrupt: %v", parts)
	}

	parts = streamAll(t, g, engine.Update{"request": "refund"}, &engine.RunOptions{ThreadID: "with-subgraphs", Subgraphs: true})
	byNS := map[string][]engine.StreamMode{}
	for _, p := range parts {
		ns := strings.Join(p.Namespace, "|")
		if ns != "" && (len(p.Namespace) != 1 || !strings.HasPrefix(p.Namespace[0], "review:")) {
			t.Fatalf("part from namespace %v, want review:<task id>", p.Namespace)
		}
		if ns != "" {
			ns = "review"
		}
		byNS[ns] = append(byNS[ns], p.Mode)
		m, _ := p.Data.(map[string]any)
		if ns == "review" && p.Mode == engine.StreamCheckpoints {
			cfg := m["config"].(map[string]any)["configurable"].(map[string]any)
			if cfg["checkpoint_ns"] != p.Namespace[0] {
				t.Fatalf("subgraph checkpoint part in namespace %v has checkpoint_ns %v", p.Namespace, cfg["checkpoint_ns"])
			}
		}
	}
	for _, mode := range []engine.StreamMode{engine.StreamValues, engine.StreamUpdates, engine.StreamTasks, engine.StreamCheckpoints} {
		if !containsMode(byNS["review"], mode) || !containsMode(byNS[""], mode) {
			t.Fatalf("with Subgraphs, %s parts: root %v, subgraph %v; want both", mode, byNS[""], byNS["review"])
		}
	}
}

func containsMode(ms []engine.StreamMode, m engine.StreamMode) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// A subgraph that resumes reports the checkpoint it goes on from, under
// its namespace, before its tasks run (upstream's tick does so in every
// graph that has a checkpointer).
func TestResumedSubgraphReportsItsLoadedCheckpoint(t *testing.T) {
	t.Parallel()
	g := reviewGraph(t)
	opts := &engine.RunOptions{ThreadID: "t", Subgraphs: true}
	streamAll(t, g, engine.Update{"request": "refund"}, opts)
	var first map[string]any
	for part, err := range g.Stream(context.Background(), engine.Command{Resume: "yes"}, opts, engine.StreamCheckpoints, engine.StreamTasks) {
		if err != nil {
			t.Fatal(err)
		}
		if len(part.Namespace) == 1 && first == nil {
			if part.Mode != engine.StreamCheckpoints {
				t.Fatalf("the subgraph's first part is %s %v, want its loaded checkpoint", part.Mode, part.Data)
			}
			first = part.Data.(map[string]any)
		}
	}
	if first == nil {
		t.Fatal("no part from the subgraph")
	}
	if next := first["next"].([]string); len(next) != 1 || next[0] != "ask" {
		t.Fatalf("the subgraph's loaded checkpoint has next %v, want [ask]", first["next"])
	}
}

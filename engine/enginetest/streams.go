package enginetest

import (
	"context"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func init() {
	registerDurabilities("37 debug stream checkpoints", debugStreamCheckpoints)
}

// Reference §11 case 37: with durability "exit", the first debug event is
// the input checkpoint at step -1, and checkpoint configs never equal their
// parents. The same holds under the other durabilities.
func debugStreamCheckpoints(t *testing.T, saver checkpoints.Saver, d engine.Durability) {
	g := engine.NewStateGraph[counter]()
	g.AddNode("graph", func(_ context.Context, s counter) (engine.Output, error) { return engine.Update{"n": s.N + 1}, nil })
	g.AddEdge(engine.Start, "graph")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	parts := collect(t, cg, engine.Update{"n": 1}, &engine.RunOptions{ThreadID: thread(t, "1"), Durability: d}, engine.StreamDebug)
	if len(parts) == 0 {
		t.Fatal("no debug events")
	}
	first := parts[0].Data.(map[string]any)
	if first["type"] != "checkpoint" || first["step"] != -1 {
		t.Fatalf("first debug event = %v", first)
	}
	payload := first["payload"].(map[string]any)
	md := payload["metadata"].(map[string]any)
	if md["source"] != "input" || md["step"] != -1 || !reflect.DeepEqual(payload["next"], []string{"__start__"}) {
		t.Fatalf("input checkpoint payload = %v", payload)
	}
	for _, p := range parts {
		m := p.Data.(map[string]any)
		if m["type"] != "checkpoint" {
			continue
		}
		pl := m["payload"].(map[string]any)
		if reflect.DeepEqual(pl["config"], pl["parent_config"]) {
			t.Fatalf("config equals parent config: %v", pl)
		}
	}
}

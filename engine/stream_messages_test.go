package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// chatMsg stands in for models.Message: the engine knows a message only by
// its MessageID method.
type chatMsg struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

func (m chatMsg) MessageID() string { return m.ID }

type msgState struct {
	Messages []chatMsg `json:"messages" reduce:"append"`
}

// The "messages" stream mode, as upstream: chunks a node streams come
// first, each with upstream's metadata keys plus the model's; then each
// message the node returns that was neither in its input nor streamed.
func TestMessagesStreamMode(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[msgState]()
	g.AddNode("agent", func(ctx context.Context, s msgState) (engine.Output, error) {
		model := map[string]any{"ls_provider": "local", "ls_model_name": "double"}
		engine.EmitMessageChunk(ctx, chatMsg{ID: "m1", Text: "Hel"}, model)
		engine.EmitMessageChunk(ctx, chatMsg{ID: "m1", Text: "lo"}, model)
		// The whole history back (as a node replacing by id would), the
		// streamed reply, and one more message.
		return engine.Update{"messages": append(s.Messages, chatMsg{ID: "m1", Text: "Hello"}, chatMsg{ID: "m2", Text: "tool note"})}, nil
	})
	g.AddEdge(engine.Start, "agent")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var chunkMeta, nodeMeta map[string]any
	opts := &engine.RunOptions{ThreadID: "th", RunID: "run-1"}
	for part, err := range cg.Stream(context.Background(), engine.Update{"messages": []chatMsg{{ID: "m0", Text: "hi"}}}, opts, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		pair := part.Data.([]any)
		msg, md := pair[0].(chatMsg), pair[1].(map[string]any)
		got = append(got, msg.ID+":"+msg.Text)
		if chunkMeta == nil {
			chunkMeta = md
		} else {
			nodeMeta = md
		}
	}
	if want := []string{"m1:Hel", "m1:lo", "m2:tool note"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("messages parts %v, want %v", got, want)
	}
	for _, k := range []string{"langgraph_step", "langgraph_node", "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns", "checkpoint_ns", "thread_id", "run_id"} {
		if _, ok := chunkMeta[k]; !ok {
			t.Errorf("chunk metadata lacks %s: %v", k, chunkMeta)
		}
		if _, ok := nodeMeta[k]; !ok {
			t.Errorf("node-output metadata lacks %s: %v", k, nodeMeta)
		}
	}
	if chunkMeta["ls_provider"] != "local" || chunkMeta["langgraph_node"] != "agent" || chunkMeta["thread_id"] != "th" || chunkMeta["run_id"] != "run-1" {
		t.Errorf("chunk metadata %v", chunkMeta)
	}
	if _, ok := nodeMeta["ls_provider"]; ok {
		t.Errorf("a node's own message carries the model's metadata: %v", nodeMeta)
	}
	if !reflect.DeepEqual(chunkMeta["langgraph_path"], []any{"__pregel_pull", "agent"}) || chunkMeta["langgraph_step"] != 1 {
		t.Errorf("chunk path/step %v %v", chunkMeta["langgraph_path"], chunkMeta["langgraph_step"])
	}
}

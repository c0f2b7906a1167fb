package models_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

func TestMessagesStateGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("greet", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		// A role dict and a typed message in one write, as upstream accepts.
		return engine.Update{"messages": []any{
			map[string]any{"role": "assistant", "content": "hello", "id": "a1"},
			models.AI("how can I help?"),
		}}, nil
	})
	g.AddNode("edit", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		fixed := models.AI("hello!")
		fixed.ID = "a1"
		return engine.Update{"messages": []models.Message{fixed, models.Remove(s.Messages[len(s.Messages)-1].ID)}}, nil
	})
	g.AddEdge(engine.Start, "greet").AddEdge("greet", "edit")
	graph, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	opts := &engine.RunOptions{ThreadID: "chat"}
	out, err := graph.Invoke(ctx, engine.Update{"messages": []models.Message{models.Human("hi")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || out.Messages[0].Text() != "hi" || out.Messages[0].ID == "" || out.Messages[1].Text() != "hello!" {
		t.Fatalf("state: %+v", out.Messages)
	}

	// A second turn reads the history back from the checkpoint.
	out, err = graph.Invoke(ctx, engine.Update{"messages": []any{models.RemoveAll(), "again"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || out.Messages[0].Text() != "again" || out.Messages[1].Text() != "hello!" {
		t.Fatalf("after remove-all: %+v", out.Messages)
	}

	snap, err := graph.GetState(ctx, checkpoints.Config{ThreadID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(snap.Values["messages"])
	if err != nil {
		t.Fatal(err)
	}
	var dicts []map[string]any
	if err := json.Unmarshal(js, &dicts); err != nil {
		t.Fatal(err)
	}
	if len(dicts) != 2 || dicts[0]["type"] != "human" || dicts[1]["type"] != "ai" || dicts[1]["id"] != "a1" {
		t.Fatalf("GetState JSON: %s", js)
	}
	for _, k := range []string{"content", "additional_kwargs", "response_metadata", "name", "tool_calls", "usage_metadata"} {
		if _, ok := dicts[1][k]; !ok {
			t.Fatalf("GetState JSON lacks %q: %s", k, js)
		}
	}

	// A RemoveMessage with an unknown id fails the run and names the id.
	_, err = graph.Invoke(ctx, engine.Update{"messages": models.Remove("ghost")}, &engine.RunOptions{ThreadID: "other"})
	if err == nil || !strings.Contains(err.Error(), `"ghost"`) || !errors.Is(err, models.ErrUnknownMessageID) {
		t.Fatalf("unknown id: %v", err)
	}
}

func TestAddMessagesDoesNotModifyItsArguments(t *testing.T) {
	t.Parallel()
	left := []models.Message{models.Human("a")}
	right := []models.Message{models.AI("b")}
	got, err := models.AddMessages(left, right)
	if err != nil {
		t.Fatal(err)
	}
	if left[0].ID != "" || right[0].ID != "" || len(left) != 1 {
		t.Fatal("arguments modified")
	}
	if ms := got.([]models.Message); len(ms) != 2 || ms[0].ID == "" || ms[0].ID == ms[1].ID {
		t.Fatalf("ids: %+v", ms)
	}
	if _, err := models.AddMessages(nil, right); err == nil {
		t.Fatal("want an error for a nil side")
	}
}

// As upstream's add_messages, a bare string written to a messages key is a
// human message, and a single message needs no list.
func TestMessagesKeyTakesAStringOrOneMessage(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("reply", func(context.Context, models.MessagesState) (engine.Output, error) {
		return engine.Update{"messages": models.AI("hello")}, nil
	})
	g.AddEdge(engine.Start, "reply")
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := graph.Invoke(context.Background(), engine.Update{"messages": "hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 || out.Messages[0].Type != models.TypeHuman || out.Messages[0].Text() != "hi" || out.Messages[1].Text() != "hello" {
		t.Fatalf("messages %+v, want human hi then ai hello", out.Messages)
	}
}

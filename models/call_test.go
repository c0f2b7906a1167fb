package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

// scriptedModel streams its reply in the given pieces.
type scriptedModel struct {
	pieces  []string
	id      string
	err     error
	seen    *models.CallOptions
	offline bool
}

func (s *scriptedModel) Info() models.ModelInfo {
	return models.ModelInfo{Provider: "scripted", Model: "pieces-1", Offline: s.offline, MaxTokens: 1000}
}

func (s *scriptedModel) Generate(ctx context.Context, msgs []models.Message, opts *models.CallOptions) (models.Message, error) {
	return s.Stream(ctx, msgs, opts, func(models.Message) error { return nil })
}

func (s *scriptedModel) Stream(_ context.Context, _ []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	s.seen = opts
	var merged models.Message
	for i, p := range s.pieces {
		c := models.AIChunk(p)
		c.ID = s.id
		if err := onChunk(c); err != nil {
			return models.Message{}, err
		}
		if i == 0 {
			merged = c
			continue
		}
		var err error
		if merged, err = models.MergeChunks(merged, c); err != nil {
			return models.Message{}, err
		}
	}
	if s.err != nil {
		return models.Message{}, s.err
	}
	return models.ToMessage(merged), nil
}

// Call streams a model's chunks to the run's "messages" stream with the
// model's metadata, under one id the reply keeps, so the node returning
// the reply does not stream it again.
func TestCallStreamsChunksUnderOneID(t *testing.T) {
	t.Parallel()
	for _, providerID := range []string{"", "msg_provider_1"} {
		model := &scriptedModel{pieces: []string{"Hel", "lo", "!"}, id: providerID}
		g := engine.NewStateGraph[models.MessagesState]()
		g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
			temp := 0.5
			reply, err := models.Call(ctx, model, s.Messages, &models.CallOptions{Temperature: &temp, MaxTokens: 64})
			if err != nil {
				return nil, err
			}
			return engine.Update{"messages": reply}, nil
		})
		g.AddEdge(engine.Start, "agent")
		graph, err := g.Compile(engine.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var texts, ids []string
		var md map[string]any
		for part, err := range graph.Stream(context.Background(), engine.Update{"messages": "hi"}, nil, engine.StreamMessages) {
			if err != nil {
				t.Fatal(err)
			}
			pair := part.Data.([]any)
			msg := pair[0].(models.Message)
			texts, ids, md = append(texts, msg.Text()), append(ids, msg.ID), pair[1].(map[string]any)
		}
		if strings.Join(texts, "|") != "Hel|lo|!" {
			t.Fatalf("provider id %q: messages parts %q, want the three chunks only", providerID, texts)
		}
		if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] || (providerID != "" && ids[0] != providerID) {
			t.Fatalf("provider id %q: chunk ids %q, want one id (the provider's when it gives one)", providerID, ids)
		}
		if md["ls_provider"] != "scripted" || md["ls_model_name"] != "pieces-1" || md["ls_model_type"] != "chat" || md["ls_temperature"] != 0.5 || md["ls_max_tokens"] != 64 {
			t.Fatalf("chunk metadata %v", md)
		}
	}
}

// A model error ends Call with that error, and WithTools binds tools
// unless a call names its own.
func TestCallErrorsAndBoundTools(t *testing.T) {
	t.Parallel()
	boom := errors.New("provider down")
	m := &scriptedModel{pieces: []string{"x"}, err: boom}
	if _, err := models.Call(context.Background(), m, nil, nil); !errors.Is(err, boom) {
		t.Fatalf("Call error %v, want the model's", err)
	}
	ok := &scriptedModel{pieces: []string{"y"}}
	bound := models.WithTools(ok, models.ToolSpec{Name: "search"})
	if _, err := bound.Generate(context.Background(), nil, nil); err != nil || len(ok.seen.Tools) != 1 || ok.seen.Tools[0].Name != "search" {
		t.Fatalf("bound tools %+v, %v", ok.seen, err)
	}
	if _, err := bound.Generate(context.Background(), nil, &models.CallOptions{Tools: []models.ToolSpec{{Name: "other"}}}); err != nil || ok.seen.Tools[0].Name != "other" {
		t.Fatalf("a call's own tools %+v, %v", ok.seen, err)
	}
}

// A call without its own cap streams the model's configured one as
// ls_max_tokens.
func TestCallReportsTheModelsDefaultMaxTokens(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
		reply, err := models.Call(ctx, &scriptedModel{pieces: []string{"a"}}, s.Messages, nil)
		return engine.Update{"messages": reply}, err
	})
	g.AddEdge(engine.Start, "agent")
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for part, err := range graph.Stream(context.Background(), engine.Update{"messages": "hi"}, nil, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		if md := part.Data.([]any)[1].(map[string]any); md["ls_max_tokens"] != 1000 {
			t.Fatalf("ls_max_tokens %v, want the model's 1000", md["ls_max_tokens"])
		}
	}
}

// An offline model's reply says so in its response metadata; a real
// model's does not.
func TestCallMarksOfflineReplies(t *testing.T) {
	t.Parallel()
	for _, offline := range []bool{false, true} {
		reply, err := models.Call(context.Background(), &scriptedModel{pieces: []string{"a"}, offline: offline}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := reply.ResponseMetadata["offline"] == true; got != offline {
			t.Fatalf("offline model %v: response metadata %v", offline, reply.ResponseMetadata)
		}
	}
}

// A message a node writes without an id gets one as it is written, as
// upstream's ensure_message_ids: the "messages" stream and the state show
// the same id, and the node's own value is not changed.
func TestWrittenMessagesGetTheirIDOnce(t *testing.T) {
	t.Parallel()
	var returned []models.Message
	g := engine.NewStateGraph[models.MessagesState]()
	g.AddNode("tools", func(context.Context, models.MessagesState) (engine.Output, error) {
		returned = []models.Message{models.ToolResult("call_1", models.Text("18°C"))}
		return engine.Update{"messages": returned}, nil
	})
	g.AddEdge(engine.Start, "tools")
	graph, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	var streamed string
	opts := &engine.RunOptions{ThreadID: "ids"}
	for part, err := range graph.Stream(context.Background(), engine.Update{"messages": "hi"}, opts, engine.StreamMessages) {
		if err != nil {
			t.Fatal(err)
		}
		streamed = part.Data.([]any)[0].(models.Message).ID
	}
	st, err := graph.GetState(context.Background(), checkpoints.Config{ThreadID: "ids"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := st.Values["messages"].([]models.Message)
	if streamed == "" || msgs[1].ID != streamed {
		t.Fatalf("streamed id %q, state id %q: want one non-empty id", streamed, msgs[1].ID)
	}
	if returned[0].ID != "" {
		t.Fatalf("the node's own slice was changed: %+v", returned[0])
	}
}

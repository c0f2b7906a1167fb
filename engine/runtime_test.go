package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/store"
)

type factState struct {
	Fact   string `json:"fact"`
	Answer string `json:"answer"`
}

// TestNodesReachTheStore: one node writes a fact to the store, the next
// reads it back: the store is shared by the run's nodes.
func TestNodesReachTheStore(t *testing.T) {
	t.Parallel()
	st, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := []string{"users", "ada"}
	g := engine.NewStateGraph[factState]()
	g.AddNode("remember", func(ctx context.Context, s factState) (engine.Output, error) {
		s2 := engine.StoreFrom(ctx)
		if s2 == nil {
			return nil, errors.New("no store")
		}
		return nil, store.Put(ctx, s2, ns, "fact", map[string]any{"text": s.Fact})
	})
	g.AddNode("recall", func(ctx context.Context, s factState) (engine.Output, error) {
		it, err := store.Get(ctx, engine.StoreFrom(ctx), ns, "fact")
		if err != nil || it == nil {
			return nil, errors.Join(errors.New("fact not found"), err)
		}
		return engine.Update{"answer": it.Value["text"]}, nil
	})
	g.AddEdge(engine.Start, "remember").AddEdge("remember", "recall")
	cg, err := g.Compile(engine.CompileOptions{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"fact": "likes tea"}, nil)
	if err != nil || out.Answer != "likes tea" {
		t.Fatalf("got %+v, %v", out, err)
	}
	if engine.StoreFrom(context.Background()) != nil {
		t.Fatal("StoreFrom outside a node must be nil")
	}
}

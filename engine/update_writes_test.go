package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

type editState struct {
	Log    []string `json:"log" reduce:"append"`
	Answer string   `json:"answer"`
	N      int      `json:"n"`
}

// An update checkpoint says, in its metadata, which node the edit was
// applied as and which state keys it wrote (routing channels left out),
// as read back from the saver; StateKeys lists every declared key, with a
// value or not.
func TestUpdateRecordsItsWritesInMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	saver := checkpoints.NewMemory()
	g := engine.NewStateGraph[editState]()
	g.AddNode("a", func(context.Context, editState) (engine.Output, error) { return engine.Update{"log": "a"}, nil })
	g.AddNode("b", func(context.Context, editState) (engine.Output, error) { return engine.Update{"log": "b"}, nil })
	g.AddEdge(engine.Start, "a").AddEdge("a", "b")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(cg.Pregel().StateKeys()); got != "[answer log n]" {
		t.Fatalf("StateKeys = %s", got)
	}
	if _, err := cg.Invoke(ctx, engine.Update{"log": []string{"in"}}, &engine.RunOptions{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := cg.Pregel().UpdateState(ctx, checkpoints.Config{ThreadID: "t"}, map[string]any{"n": 3, "answer": "x"}, "a")
	if err != nil {
		t.Fatal(err)
	}
	tup, err := saver.Get(ctx, cfg)
	if err != nil || tup == nil {
		t.Fatal(tup, err)
	}
	if tup.Metadata.Source != checkpoints.SourceUpdate {
		t.Fatalf("source = %s", tup.Metadata.Source)
	}
	if got := fmt.Sprint(tup.Metadata.Extra[engine.MetadataEdited]); got != "map[a:[answer n]]" {
		t.Fatalf("writes metadata = %s; want the keys written as a, without the edge to b", got)
	}
}

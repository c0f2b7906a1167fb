package engine_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

type item struct {
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

type order struct {
	Tags  []string `json:"tags"`
	Items []item   `json:"items" reduce:"append"`
	Total int      `json:"total"`
}

// Input decoded from JSON (what the Studio and APIs receive) is converted
// to the state's Go types when it fits exactly, and refused clearly when
// it does not.
func TestJSONShapedInput(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[order]()
	g.AddNode("sum", func(_ context.Context, o order) (engine.Output, error) {
		n := 0
		for _, it := range o.Items {
			n += it.Qty
		}
		return engine.Update{"total": n}, nil
	})
	g.AddEdge(engine.Start, "sum")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{
		"tags":  []any{"a", "b"},
		"items": []any{map[string]any{"name": "x", "qty": float64(2)}, map[string]any{"name": "y", "qty": float64(3)}},
	}
	out, err := cg.Invoke(context.Background(), in, nil)
	if err != nil || out.Total != 5 || !reflect.DeepEqual(out.Tags, []string{"a", "b"}) {
		t.Fatalf("got %+v, %v", out, err)
	}
	for _, bad := range []map[string]any{
		{"tags": []any{"a", float64(1)}},
		{"items": []any{map[string]any{"name": "x", "colour": "red"}}},
	} {
		if _, err := cg.Invoke(context.Background(), bad, nil); !errors.Is(err, engine.ErrInvalidUpdate) {
			t.Errorf("input %v: err = %v, want ErrInvalidUpdate", bad, err)
		}
	}
}

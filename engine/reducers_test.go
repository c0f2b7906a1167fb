package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

func init() {
	// Keeps the longest of the two strings: a reducer no built-in name has.
	engine.RegisterReducer("test_longest", func(cur, next any) (any, error) {
		c, _ := cur.(string)
		if n := next.(string); len(n) > len(c) {
			return n, nil
		}
		return c, nil
	})
}

type longestState struct {
	Word string `json:"word" reduce:"test_longest"`
}

type unknownReducerState struct {
	Word string `json:"word" reduce:"no_such_reducer"`
}

// A reducer registered by name is usable in a struct tag; an unknown name
// is a compile error that says what to do; a name is registered once.
func TestNamedReducers(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[longestState]()
	g.AddNode("a", func(context.Context, longestState) (engine.Output, error) { return engine.Update{"word": "kiwi"}, nil })
	g.AddNode("b", func(context.Context, longestState) (engine.Output, error) {
		return engine.Update{"word": "banana"}, nil
	})
	g.AddEdge(engine.Start, "a").AddEdge(engine.Start, "b")
	cg, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cg.Invoke(context.Background(), engine.Update{"word": "fig"}, nil)
	if err != nil || out.Word != "banana" {
		t.Fatalf("run = %+v, %v; want the longest word, banana", out, err)
	}

	bad := engine.NewStateGraph[unknownReducerState]()
	bad.AddNode("a", func(context.Context, unknownReducerState) (engine.Output, error) { return nil, nil })
	bad.AddEdge(engine.Start, "a")
	if _, err := bad.Compile(engine.CompileOptions{}); !errors.Is(err, engine.ErrInvalidGraph) || !strings.Contains(err.Error(), `unknown reducer "no_such_reducer"`) {
		t.Fatalf("compile with an unknown reducer: %v", err)
	}

	defer func() {
		if recover() == nil {
			t.Fatal("registering a taken name must panic")
		}
	}()
	engine.RegisterReducer("append", func(a, b any) (any, error) { return b, nil })
}

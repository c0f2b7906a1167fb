package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

func addOne(_ context.Context, in any) (any, error) {
	n, ok := in.(int)
	if !ok {
		return nil, fmt.Errorf("add one: got %T, want int", in)
	}
	return n + 1, nil
}

// Cases 1 and 2 (tp::test_invoke_two_processes_two_in_two_out_invalid and
// _valid): two nodes read the same input and write the same output in one
// superstep. A LastValue output cannot take both; a Topic collects both.
func TestConformanceTwoWritersOneChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		output  channels.Channel
		want    any
		wantErr bool
	}{
		{name: "LastValue refuses two writes in one step", output: channels.NewLastValue(reflect.TypeFor[int]()), wantErr: true},
		{name: "Topic collects both writes", output: channels.NewTopic(reflect.TypeFor[int](), false), want: []int{3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustPregel(t, engine.PregelConfig{
				Channels: map[string]channels.Channel{
					"input":  channels.NewLastValue(reflect.TypeFor[int]()),
					"output": tc.output,
				},
				Nodes: []*engine.Node{
					mustNode(t, "one", engine.NewNode().SubscribeOnly("input").Do(addOne).WriteTo("output")),
					mustNode(t, "two", engine.NewNode().SubscribeOnly("input").Do(addOne).WriteTo("output")),
				},
				InputChannels:  []string{"input"},
				OutputChannels: []string{"output"},
			})
			got, err := p.Invoke(context.Background(), 2, nil)
			if tc.wantErr {
				if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(err.Error(), `"output"`) {
					t.Fatalf("err = %v, want ErrInvalidUpdate naming the channel \"output\"", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("output = %#v, want %#v", got, tc.want)
			}
		})
	}
}

type helloState struct {
	Hello string `json:"hello"`
}

// Case 1, StateGraph form: a conditional entry to ["one", "two"], both
// writing the LastValue key hello. Upstream's message is "At key 'hello':
// Can receive only one value per step..."; ours must name the key too.
func TestConformanceConcurrentLastValueWrites(t *testing.T) {
	t.Parallel()
	g := engine.NewStateGraph[helloState]()
	world := func(context.Context, helloState) (engine.Output, error) { return engine.Update{"hello": "world"}, nil }
	g.AddNode("one", world).AddNode("two", world)
	g.AddConditionalEdges(engine.Start, func(context.Context, helloState) (engine.Route, error) {
		return engine.To("one", "two"), nil
	}, nil)
	_, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"hello": "there"}, nil)
	if !errors.Is(err, engine.ErrInvalidUpdate) {
		t.Fatalf("err = %v, want ErrInvalidUpdate", err)
	}
	if msg := strings.ToLower(err.Error()); !strings.Contains(msg, `at key "hello"`) {
		t.Fatalf("err = %q, want it to say `at key \"hello\"`", err)
	}
}

type messagesState struct {
	Messages []string `json:"messages" reduce:"append"`
}

// Case 12 (tp::test_overwrite_*): an Overwrite written to a reducer key
// replaces the value. Within one step, writes before it (in barrier order:
// nodes by name) are folded then replaced, writes after it are ignored,
// and a second Overwrite is an error. The JSON forms a client would send
// behave like Overwrite.
func TestConformanceOverwrite(t *testing.T) {
	t.Parallel()
	overwriteB := engine.Overwrite{Value: []string{"b"}}
	for _, tc := range []struct {
		name     string
		parallel bool // START→a→{b,c}→d instead of START→a→b
		b, c     any  // what b and c write to messages
		want     []string
		wantErr  string
	}{
		{name: "sequential", b: overwriteB, want: []string{"b"}},
		{name: "parallel with an append", parallel: true, b: overwriteB, c: []string{"c"}, want: []string{"b", "d"}},
		{name: "parallel JSON __overwrite__ form", parallel: true, b: map[string]any{"__overwrite__": []any{"b"}}, c: []string{"c"}, want: []string{"b", "d"}},
		{name: "parallel JSON type/value form", parallel: true, b: map[string]any{"type": "__overwrite__", "value": []any{"b"}}, c: []string{"c"}, want: []string{"b", "d"}},
		{name: "two overwrites in one step", parallel: true, b: overwriteB, c: engine.Overwrite{Value: []string{"c"}}, wantErr: "only one overwrite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := engine.NewStateGraph[messagesState]()
			write := func(v any) func(context.Context, messagesState) (engine.Output, error) {
				return func(context.Context, messagesState) (engine.Output, error) { return engine.Update{"messages": v}, nil }
			}
			g.AddNode("a", write([]string{"a"})).AddNode("b", write(tc.b))
			g.AddEdge(engine.Start, "a").AddEdge("a", "b")
			if tc.parallel {
				g.AddNode("c", write(tc.c)).AddNode("d", write([]string{"d"}))
				g.AddEdge("a", "c").AddEdge("b", "d").AddEdge("c", "d")
			}
			got, err := mustCompile(t, g, engine.CompileOptions{}).Invoke(context.Background(), engine.Update{"messages": []string{"start"}}, nil)
			if tc.wantErr != "" {
				if !errors.Is(err, engine.ErrInvalidUpdate) || !strings.Contains(strings.ToLower(err.Error()), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidUpdate saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Messages, tc.want) {
				t.Fatalf("messages = %q, want %q", got.Messages, tc.want)
			}
		})
	}
}

type fooState struct {
	Foo string `json:"foo"`
}

// Low-level reads (upstream's NodeBuilder): a node reading several
// channels gets a map of the available ones; a node subscribed to one
// channel only gets its raw value.
func TestConformanceNodeInput(t *testing.T) {
	t.Parallel()
	type seen struct{ both, raw any }
	var s seen
	p := mustPregel(t, engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"input":  channels.NewLastValue(reflect.TypeFor[int]()),
			"total":  channels.NewBinaryOperator(reflect.TypeFor[int](), channels.AddReducer),
			"output": channels.NewLastValue(reflect.TypeFor[int]()),
		},
		Nodes: []*engine.Node{
			mustNode(t, "sum", engine.NewNode().SubscribeTo(true, "input").ReadFrom("total").Do(func(_ context.Context, in any) (any, error) {
				s.both = in
				m, ok := in.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("got %T, want a map", in)
				}
				return m["input"].(int) + m["total"].(int) + 10, nil
			}).WriteTo("total")),
			mustNode(t, "echo", engine.NewNode().SubscribeOnly("total").Do(func(_ context.Context, in any) (any, error) {
				s.raw = in
				return in, nil
			}).WriteTo("output")),
		},
		InputChannels:  []string{"input"},
		OutputChannels: []string{"output"},
	})
	got, err := p.Invoke(context.Background(), 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"input": 5, "total": 0}; !reflect.DeepEqual(s.both, want) {
		t.Fatalf("two-channel node input = %#v, want %#v", s.both, want)
	}
	if s.raw != 15 {
		t.Fatalf("single-channel node input = %#v, want the raw int 15", s.raw)
	}
	if got != 15 {
		t.Fatalf("output = %#v, want 15", got)
	}
}

// Low-level writes: entries with mappers and a tuple writer turn one
// output into several channel writes.
func TestConformanceWriteMappers(t *testing.T) {
	t.Parallel()
	asInt := func(v any) int { n, _ := v.(int); return n }
	p := mustPregel(t, engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"input": channels.NewLastValue(reflect.TypeFor[int]()),
			"foo":   channels.NewLastValue(reflect.TypeFor[string]()),
			"bar":   channels.NewLastValue(reflect.TypeFor[int]()),
			"baz":   channels.NewLastValue(reflect.TypeFor[int]()),
		},
		Nodes: []*engine.Node{
			mustNode(t, "split", engine.NewNode().SubscribeOnly("input").Do(func(_ context.Context, in any) (any, error) { return in, nil }).WriteTo(
				engine.WriteEntry{Channel: "foo", Mapper: func(v any) (any, error) { return strconv.Itoa(asInt(v)), nil }},
				engine.WriteEntry{Channel: "bar", Mapper: func(v any) (any, error) { return asInt(v) + 333, nil }},
				engine.WriteTuple{Mapper: func(v any) ([]engine.KV, error) {
					return []engine.KV{{Key: "baz", Value: asInt(v) + 456}}, nil
				}},
			)),
		},
		InputChannels:  []string{"input"},
		OutputChannels: []string{"foo", "bar", "baz"},
	})
	got, err := p.Invoke(context.Background(), 123, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"foo": "123", "bar": 456, "baz": 579}; !reflect.DeepEqual(got, want) {
		t.Fatalf("output = %#v, want %#v", got, want)
	}
}

package enginetest

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

func init() {
	register("4 waiting edge with a checkpointer", waitingEdge)
	register("13 multiple writes to one channel from one node", multipleWritesSameChannel)
}

// docsState is the State of upstream's test_in_one_fan_out_* cases.
type docsState struct {
	Query  string   `json:"query"`
	Answer string   `json:"answer"`
	Docs   []string `json:"docs"`
}

const weatherQuery = "what is weather in sf"

// Case 4 (tp::test_in_one_fan_out_state_graph_waiting_edge), with a
// checkpointer: a waiting edge from two branches of different lengths runs
// qa once, after both. (The engine's own tests run it without one.)
func waitingEdge(t *testing.T, saver checkpoints.Saver) {
	var qaCalls atomic.Int32
	g := engine.NewStateGraph[docsState]()
	// upstream's sorted_add reducer: append, then sort.
	g.Reducer("docs", channels.ReducerFunc(func(cur, next []string) []string {
		out := slices.Concat(cur, next)
		slices.Sort(out)
		return out
	}))
	g.AddNode("rewrite_query", func(_ context.Context, s docsState) (engine.Output, error) {
		return engine.Update{"query": "query: " + s.Query}, nil
	})
	g.AddNode("analyzer_one", func(_ context.Context, s docsState) (engine.Output, error) {
		return engine.Update{"query": "analyzed: " + s.Query}, nil
	})
	g.AddNode("retriever_one", func(context.Context, docsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc1", "doc2"}}, nil
	})
	g.AddNode("retriever_two", func(context.Context, docsState) (engine.Output, error) {
		return engine.Update{"docs": []string{"doc3", "doc4"}}, nil
	})
	g.AddNode("qa", func(_ context.Context, s docsState) (engine.Output, error) {
		qaCalls.Add(1)
		return engine.Update{"answer": strings.Join(s.Docs, ",")}, nil
	})
	g.AddEdge(engine.Start, "rewrite_query")
	g.AddEdge("rewrite_query", "analyzer_one").AddEdge("analyzer_one", "retriever_one")
	g.AddEdge("rewrite_query", "retriever_two")
	g.AddJoin([]string{"retriever_one", "retriever_two"}, "qa")
	g.AddEdge("qa", engine.End)
	var rec recorder
	th := thread(t, "1")
	got, err := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver}).Invoke(ctx(), engine.Update{"query": weatherQuery}, &engine.RunOptions{ThreadID: th, Listener: rec.listen})
	if err != nil {
		t.Fatal(err)
	}
	want := docsState{
		Query:  "analyzed: query: " + weatherQuery,
		Docs:   []string{"doc1", "doc2", "doc3", "doc4"},
		Answer: "doc1,doc2,doc3,doc4",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("result = %+v, want %+v", got, want)
	}
	if n := qaCalls.Load(); n != 1 {
		t.Fatalf("qa ran %d times, want 1", n)
	}
	// Upstream's updates: rewrite_query, analyzer_one, retriever_two,
	// retriever_one, qa. A step's tasks finish in any order; the set per
	// step is what the barrier guarantees.
	byStep := map[int][]string{}
	for _, f := range eventsOf[engine.TaskFinished](&rec) {
		if f.Task.Name != engine.Start {
			byStep[f.Task.Step] = append(byStep[f.Task.Step], f.Task.Name)
		}
	}
	var stepNums []int
	for s := range byStep {
		stepNums = append(stepNums, s)
	}
	sort.Ints(stepNums)
	var steps [][]string
	for _, s := range stepNums {
		slices.Sort(byStep[s])
		steps = append(steps, byStep[s])
	}
	if wantSteps := [][]string{{"rewrite_query"}, {"analyzer_one", "retriever_two"}, {"retriever_one"}, {"qa"}}; !reflect.DeepEqual(steps, wantSteps) {
		t.Fatalf("tasks by step = %v, want %v", steps, wantSteps)
	}
	// The checkpointed run ends where the in-memory one does.
	if n := len(history(t, saver, th)); n != 6 {
		t.Fatalf("%d checkpoints, want 6 (input, START, then one per step)", n)
	}
}

type fooState struct {
	Foo string `json:"foo"`
}

// Case 13 (tp::test_multiple_writes_same_channel_from_same_node): a node
// writing one key twice (Updates, upstream's list of (key, value) pairs in
// a Command) makes two writes, folded in order by the reducer. Upstream
// shows them as updates {"one": [{"foo": "one.0"}, {"foo": "one.1"}]} and
// the task result {"foo": {"$writes": [...]}}; here they are the task's
// TaskFinished writes and its two pending writes.
func multipleWritesSameChannel(t *testing.T, saver checkpoints.Saver) {
	var seenByTwo string
	g := engine.NewStateGraph[fooState]()
	g.Reducer("foo", channels.ReducerFunc(func(cur, next string) string {
		if cur == "" {
			return next
		}
		return cur + ", " + next
	}))
	g.AddNode("one", func(context.Context, fooState) (engine.Output, error) {
		return engine.Command{Update: engine.Updates{{Key: "foo", Value: "one.0"}, {Key: "foo", Value: "one.1"}}}, nil
	})
	g.AddNode("two", func(_ context.Context, s fooState) (engine.Output, error) {
		seenByTwo = s.Foo
		return engine.Update{"foo": "two"}, nil
	})
	g.AddEdge(engine.Start, "one").AddEdge("one", "two")
	var rec recorder
	th := thread(t, "1")
	cg := mustCompile(t, g, engine.CompileOptions{Checkpointer: saver})
	got, err := cg.Invoke(ctx(), engine.Update{"foo": "input"}, &engine.RunOptions{ThreadID: th, Durability: engine.DurabilitySync, Listener: rec.listen})
	if err != nil {
		t.Fatal(err)
	}
	if want := "input, one.0, one.1"; seenByTwo != want {
		t.Fatalf("two's input foo = %q, want %q", seenByTwo, want)
	}
	if want := "input, one.0, one.1, two"; got.Foo != want {
		t.Fatalf("final foo = %q, want %q", got.Foo, want)
	}
	fin := finishedOf(&rec, "one")
	if len(fin) != 1 {
		t.Fatalf("one finished %d times, want 1", len(fin))
	}
	var writes []engine.KV
	for _, w := range fin[0].Writes {
		if w.Key == "foo" {
			writes = append(writes, w)
		}
	}
	if want := []engine.KV{{Key: "foo", Value: "one.0"}, {Key: "foo", Value: "one.1"}}; !reflect.DeepEqual(writes, want) {
		t.Fatalf("one's writes to foo = %v, want %v", writes, want)
	}
	// The checkpoint before one ran holds one's two writes, in order.
	var stored []any
	for _, tup := range history(t, saver, th) {
		for _, pw := range tup.PendingWrites {
			if pw.TaskID == fin[0].Task.ID && pw.Channel == "foo" {
				stored = append(stored, decoded(t, pw.Value))
			}
		}
	}
	if want := []any{"one.0", "one.1"}; !reflect.DeepEqual(stored, want) {
		t.Fatalf("one's pending writes to foo = %v, want %v", stored, want)
	}
	// GetState folds the repeated writes like upstream's task result.
	st := snapshotWithNext(t, cg, th, "one")
	if len(st.Tasks) != 1 || !reflect.DeepEqual(st.Tasks[0].Result, map[string]any{"foo": map[string]any{"$writes": []any{"one.0", "one.1"}}}) {
		t.Fatalf("task result of one = %+v, want {foo: {$writes: [one.0 one.1]}}", st.Tasks)
	}
}

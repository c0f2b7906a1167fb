package engine_test

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/testclock"
)

// Case 35 (tp::test_in_one_fan_out_state_graph_waiting_edge_multiple, with
// and without a cache): rewrite_query runs twice per run (decider loops
// back once). With a cache the second run takes both of its results from
// the cache, routing included, so it runs 2 times in all instead of 4;
// after the cache is cleared it runs again. Upstream reports a hit as an
// update with __metadata__.cached and no task_result; here a hit is a
// TaskFinished with Cached set and no TaskStarted (the node did not run).
func TestConformanceNodeCache(t *testing.T) {
	t.Parallel()
	for _, withCache := range []bool{true, false} {
		name := map[bool]string{true: "with cache", false: "without cache"}[withCache]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var rewrites atomic.Int32
			var opts []engine.NodeOption
			if withCache {
				opts = append(opts, engine.WithCache(engine.CachePolicy{}))
			}
			g := engine.NewStateGraph[docsState]()
			g.Reducer("docs", sortedAdd)
			g.AddNode("rewrite_query", func(_ context.Context, s docsState) (engine.Output, error) {
				rewrites.Add(1)
				return engine.Update{"query": "query: " + s.Query}, nil
			}, opts...)
			g.AddNode("analyzer_one", func(_ context.Context, s docsState) (engine.Output, error) {
				return engine.Update{"query": "analyzed: " + s.Query}, nil
			})
			g.AddNode("retriever_one", func(context.Context, docsState) (engine.Output, error) {
				return engine.Update{"docs": []string{"doc1", "doc2"}}, nil
			})
			g.AddNode("retriever_two", func(context.Context, docsState) (engine.Output, error) {
				return engine.Update{"docs": []string{"doc3", "doc4"}}, nil
			})
			g.AddNode("decider", func(context.Context, docsState) (engine.Output, error) { return nil, nil })
			g.AddNode("qa", func(_ context.Context, s docsState) (engine.Output, error) {
				return engine.Update{"answer": strings.Join(s.Docs, ",")}, nil
			})
			g.AddEdge(engine.Start, "rewrite_query")
			g.AddEdge("rewrite_query", "analyzer_one").AddEdge("analyzer_one", "retriever_one")
			g.AddEdge("rewrite_query", "retriever_two")
			g.AddJoin([]string{"retriever_one", "retriever_two"}, "decider")
			g.AddConditionalEdges("decider", func(_ context.Context, s docsState) (engine.Route, error) {
				if strings.Count(s.Query, "analyzed") > 1 {
					return engine.To("qa"), nil
				}
				return engine.To("rewrite_query"), nil
			}, nil)
			g.AddEdge("qa", engine.End)
			nodeCache := cache.NewMemory(nil)
			graph := mustCompile(t, g, engine.CompileOptions{Cache: nodeCache})

			want := docsState{
				Query:  "analyzed: query: analyzed: query: " + weatherQuery,
				Docs:   []string{"doc1", "doc1", "doc2", "doc2", "doc3", "doc3", "doc4", "doc4"},
				Answer: "doc1,doc1,doc2,doc2,doc3,doc3,doc4,doc4",
			}
			var rec recorder
			run := func() {
				t.Helper()
				rec.reset()
				got, err := graph.Invoke(ctx, engine.Update{"query": weatherQuery}, &engine.RunOptions{Listener: rec.listen})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("result = %+v, want %+v", got, want)
				}
			}

			run()
			run()
			wantRewrites := map[bool]int32{true: 2, false: 4}[withCache]
			if n := rewrites.Load(); n != wantRewrites {
				t.Fatalf("rewrite_query ran %d times in two runs, want %d", n, wantRewrites)
			}
			// The second run's view of rewrite_query: two results, cached
			// exactly when there is a cache, with the same writes as a run.
			fin := finishedOf(&rec, "rewrite_query")
			wantQueries := []string{"query: " + weatherQuery, "query: analyzed: query: " + weatherQuery}
			if len(fin) != 2 {
				t.Fatalf("rewrite_query finished %d times in the second run, want 2", len(fin))
			}
			for i, f := range fin {
				if f.Cached != withCache {
					t.Fatalf("second run, rewrite_query result %d: cached = %v, want %v", i, f.Cached, withCache)
				}
				var query any
				for _, w := range f.Writes {
					if w.Key == "query" {
						query = w.Value
					}
				}
				if query != wantQueries[i] {
					t.Fatalf("second run, rewrite_query result %d wrote query %v, want %q", i, query, wantQueries[i])
				}
			}
			wantStarted := map[bool]int{true: 0, false: 2}[withCache]
			if n := len(startedOf(&rec, "rewrite_query")); n != wantStarted {
				t.Fatalf("second run: rewrite_query started %d times, want %d", n, wantStarted)
			}
			if !withCache {
				return
			}
			if err := nodeCache.Clear(ctx, nil); err != nil {
				t.Fatal(err)
			}
			run()
			if n := rewrites.Load(); n != 4 {
				t.Fatalf("after clearing the cache rewrite_query ran %d times in all, want 4", n)
			}
		})
	}
}

type clockState struct {
	Input string    `json:"input"`
	At    time.Time `json:"at"`
}

// A cached node whose result changes on every run (it returns the time):
// the same input gives the cached time until the entry's TTL passes on the
// cache's clock; another input runs the node.
func TestConformanceCachedTimestamp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	nodeCache := cache.NewMemory(&cache.MemoryOptions{Now: clock.Now})
	var calls atomic.Int32
	g := engine.NewStateGraph[clockState]()
	g.AddNode("stamp", func(context.Context, clockState) (engine.Output, error) {
		n := calls.Add(1)
		// Distinct per call even if the wall clock does not move.
		return engine.Update{"at": time.Now().Add(time.Duration(n) * time.Second)}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: 30 * time.Second}))
	g.AddEdge(engine.Start, "stamp")
	graph := mustCompile(t, g, engine.CompileOptions{Cache: nodeCache})
	stamp := func(input string) time.Time {
		t.Helper()
		got, err := graph.Invoke(ctx, engine.Update{"input": input}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return got.At
	}

	a1 := stamp("a")
	a2 := stamp("a")
	if !a2.Equal(a1) || calls.Load() != 1 {
		t.Fatalf("same input: %v then %v after %d calls; want the cached time and 1 call", a1, a2, calls.Load())
	}
	b := stamp("b")
	if b.Equal(a1) || calls.Load() != 2 {
		t.Fatalf("other input: %v (first %v) after %d calls; want a new time and 2 calls", b, a1, calls.Load())
	}
	clock.Advance(29 * time.Second)
	if a3 := stamp("a"); !a3.Equal(a1) || calls.Load() != 2 {
		t.Fatalf("before the TTL: %v after %d calls; want the cached %v", a3, calls.Load(), a1)
	}
	clock.Advance(2 * time.Second)
	if a4 := stamp("a"); a4.Equal(a1) || calls.Load() != 3 {
		t.Fatalf("after the TTL: %v after %d calls; want a new time and 3 calls", a4, calls.Load())
	}
}

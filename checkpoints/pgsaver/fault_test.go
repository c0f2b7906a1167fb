package pgsaver_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

type faultState struct {
	Log []string `json:"log" reduce:"append"`
}

// A run whose database connections are cut mid-run, and whose
// reconnections are refused for a while (a server restarting), still ends
// well: the saver retries the transient faults instead of failing the run,
// and no step runs twice.
func TestRunOutlivesConnectionFaults(t *testing.T) {
	t.Parallel()
	for _, d := range []struct {
		name string
		d    engine.Durability
	}{{"sync", engine.DurabilitySync}, {"async", engine.DurabilityAsync}} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			proxy := pgtest.NewProxy(t)
			saver := pgsaver.New(pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial}), &pgsaver.Options{RetryWindow: 20 * time.Second})
			calls := map[string]int{}
			node := func(name string, fault bool) func(context.Context, faultState) (engine.Output, error) {
				return func(context.Context, faultState) (engine.Output, error) {
					calls[name]++
					if fault {
						// The server goes away: every connection is reset and
						// the next five attempts to reconnect are refused.
						proxy.Refuse(5)
						proxy.Cut()
					}
					return engine.Update{"log": []string{name}}, nil
				}
			}
			g := engine.NewStateGraph[faultState]()
			g.AddNode("a", node("a", false)).AddNode("b", node("b", true)).AddNode("c", node("c", false))
			g.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", "c")
			cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
			if err != nil {
				t.Fatal(err)
			}
			opts := &engine.RunOptions{ThreadID: "fault-" + d.name, Durability: d.d}
			out, err := cg.Invoke(context.Background(), engine.Update{"log": []string{"in"}}, opts)
			if err != nil {
				t.Fatalf("the run failed on a transient fault: %v", err)
			}
			if want := []string{"in", "a", "b", "c"}; !reflect.DeepEqual(out.Log, want) {
				t.Fatalf("output %v, want %v", out.Log, want)
			}
			if calls["a"] != 1 || calls["b"] != 1 || calls["c"] != 1 {
				t.Fatalf("calls %v, want each node once", calls)
			}
			if _, refused := proxy.Counts(); refused < 5 {
				t.Fatalf("the proxy refused %d connections; the fault was not exercised", refused)
			}
			st, err := cg.GetState(context.Background(), checkpoints.Config{ThreadID: opts.ThreadID})
			if err != nil || len(st.Next) != 0 || !reflect.DeepEqual(st.Values["log"], []any{"in", "a", "b", "c"}) && !reflect.DeepEqual(st.Values["log"], []string{"in", "a", "b", "c"}) {
				t.Fatalf("saved state %+v, %v", st, err)
			}
		})
	}
}

// With retries off, the same fault fails the run at once: the test above
// exercises the retry, not a fault that never bites.
func TestConnectionFaultFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	proxy := pgtest.NewProxy(t)
	saver := pgsaver.New(pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial}), &pgsaver.Options{RetryWindow: -1})
	g := engine.NewStateGraph[faultState]()
	g.AddNode("a", func(context.Context, faultState) (engine.Output, error) {
		proxy.Refuse(-1)
		proxy.Cut()
		return engine.Update{"log": []string{"a"}}, nil
	})
	g.AddEdge(engine.Start, "a")
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cg.Invoke(context.Background(), engine.Update{}, &engine.RunOptions{ThreadID: "no-retry", Durability: engine.DurabilitySync}); err == nil {
		t.Fatal("the run succeeded with its database gone and no retry")
	}
}

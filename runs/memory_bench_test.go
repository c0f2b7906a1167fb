package runs_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// BenchmarkIdleThreadMemory reports the heap a Manager keeps for each
// idle thread it holds (issue #20, target 7): its record, its hub and the
// events it retains for tabs that open later, after one run of a 3-node
// graph. The checkpoints, registry and run log are in Postgres, so
// what the heap holds is the Manager's own. b.N threads are held at once
// (the idle limits raised above b.N); the figure is B/thread.
func BenchmarkIdleThreadMemory(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	sg := engine.NewStateGraph[idleState]()
	for _, n := range []string{"a", "b", "c"} {
		sg.AddNode(n, func(context.Context, idleState) (engine.Output, error) {
			return engine.Update{"log": n}, nil
		})
	}
	sg.AddSequence("a", "b", "c").AddEdge(engine.Start, "a").AddEdge("c", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil)})
	if err != nil {
		b.Fatal(err)
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"abc": g},
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)),
		runs.WithIdleLimits(1<<30, 1<<50))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		th, err := m.Start(ctx, "abc", "", map[string]any{"log": []string{"go"}}, runs.StartOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := m.Wait(ctx, th.ID); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	b.ReportMetric(float64(held)/float64(b.N), "B/thread")
	runtime.KeepAlive(m)
}

type idleState struct {
	Log []string `json:"log" reduce:"append"`
}

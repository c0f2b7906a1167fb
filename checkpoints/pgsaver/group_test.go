package pgsaver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

type growState struct {
	N   int    `json:"n"`
	Log string `json:"log"`
}

// Many threads running at once on a saver that runs two transactions at a
// time, so that their saves share commits: every run ends as it would
// alone, in each durability, with its whole history, its growing value
// (a blob, stored as deltas) and its pending writes saved.
func TestGroupCommitEngineRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const steps = 12
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, &pgsaver.Options{MaxTransactions: 2})
	g := engine.NewStateGraph[growState]()
	g.AddNode("grow", func(_ context.Context, st growState) (engine.Output, error) {
		return engine.Update{"n": st.N + 1, "log": st.Log + strings.Repeat(fmt.Sprint(st.N%10), 20)}, nil
	})
	g.AddEdge(engine.Start, "grow")
	g.AddConditionalEdges("grow", func(_ context.Context, st growState) (engine.Route, error) {
		if st.N >= steps {
			return engine.To(engine.End), nil
		}
		return engine.To("grow"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: s})
	if err != nil {
		t.Fatal(err)
	}
	durabilities := []engine.Durability{engine.DurabilityAsync, engine.DurabilitySync, engine.DurabilityExit}
	var wg sync.WaitGroup
	const threads = 24
	errs := make(chan error, threads)
	for i := range threads {
		wg.Go(func() {
			thread := fmt.Sprint("g", i)
			out, err := cg.Invoke(ctx, engine.Update{"n": 0, "log": ""}, &engine.RunOptions{ThreadID: thread, Durability: durabilities[i%3]})
			if err == nil && (out.N != steps || len(out.Log) != 20*steps) {
				err = fmt.Errorf("thread %s ended at %+v", thread, out)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var rows, txs int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT xmin::text) FROM checkpoints`).Scan(&rows, &txs); err != nil {
		t.Fatal(err)
	}
	if txs >= rows {
		t.Errorf("%d checkpoints in %d transactions: no save shared a commit", rows, txs)
	}
	for i := range threads {
		cfg := checkpoints.Config{ThreadID: fmt.Sprint("g", i)}
		snap, err := cg.GetState(ctx, cfg)
		if err != nil || snap.Values["n"] != float64(steps) && snap.Values["n"] != steps || len(fmt.Sprint(snap.Values["log"])) != 20*steps {
			t.Errorf("thread %s: state %v, %v", cfg.ThreadID, snap, err)
			continue
		}
		hist, err := cg.GetStateHistory(ctx, cfg, engine.HistoryOptions{})
		want := steps + 2 // the input, its start, then each step
		if durabilities[i%3] == engine.DurabilityExit {
			want = 1
		}
		if err != nil || len(hist) != want {
			t.Errorf("thread %s (%v): %d checkpoints, want %d (%v)", cfg.ThreadID, durabilities[i%3], len(hist), want, err)
		}
	}
}

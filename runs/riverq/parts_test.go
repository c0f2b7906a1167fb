package riverq_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
)

// startParts starts a process serving graph "ab" (a → b): on the process
// given hold, node b waits until its run is cancelled, after marking the
// process dead (it stops renewing its lease, as a killed one would).
func startParts(t *testing.T, pool *pgxpool.Pool, id string, dead *atomic.Bool, hold bool) *runs.Manager {
	t.Helper()
	sg := engine.NewStateGraph[abState]()
	sg.AddNode("a", func(context.Context, abState) (engine.Output, error) { return engine.Update{"log": "a"}, nil })
	sg.AddNode("b", func(ctx context.Context, _ abState) (engine.Output, error) {
		if hold {
			dead.Store(true)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return engine.Update{"log": "b-" + id}, nil
	})
	sg.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil)})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := serveQueued(t, pool, id, "ab", g, dead)
	return m
}

// TestTakeoverNumbersPartsOn: an API run streaming its parts stops in
// node b on process A (A dies); B takes it over and finishes it. A client
// of B that followed the run from its start, before the takeover, gets
// every part once, ids without a gap or a repeat from A's first to B's
// last, then the end.
func TestTakeoverNumbersPartsOn(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	var deadA atomic.Bool
	ma := startParts(t, pool, "a", &deadA, true)
	mb := startParts(t, pool, "b", nil, false)
	ctx := context.Background()
	spec := &runs.StreamSpec{Modes: []engine.StreamMode{engine.StreamValues, engine.StreamUpdates}, Keep: true}
	th, err := ma.Run(ctx, runs.RunRequest{Graph: "ab", Thread: "tk", Input: map[string]any{"log": []any{"in"}}, Stream: spec})
	if err != nil {
		t.Fatal(err)
	}
	log, ok := mb.RunParts(ctx, "tk", th.RunID, 0)
	if !ok {
		t.Fatal("B finds no parts of the run A executes")
	}
	got := readAll(t, "B's client", log)
	var names []string
	for i, p := range got {
		if p.ID != i {
			t.Fatalf("part %d of %d has id %d: ids %v", i, len(got), p.ID, partIDs(got))
		}
		names = append(names, string(p.Mode)+" "+string(p.Data))
	}
	all := strings.Join(names, "\n")
	// A's parts (input, a) come first; B's (b) after, numbered on.
	if !strings.Contains(all, `updates {"a":{"log":"a"}}`) || !strings.HasSuffix(all, `values {"log":["in","a","b-b"]}`) {
		t.Fatalf("the parts B's client got:\n%s", all)
	}
	// B, which holds the parts since its takeover only, and a process
	// started since replay the same, from the store (A, dead, still holds
	// its own stale log).
	mc := startParts(t, pool, "c", nil, false)
	for name, m := range map[string]*runs.Manager{"B": mb, "a third process": mc} {
		stored, ok := m.RunParts(ctx, "tk", th.RunID, 0)
		if !ok {
			t.Fatalf("%s finds no parts of the ended run", name)
		}
		if replay := readAll(t, name, stored); fmt.Sprint(replay) != fmt.Sprint(got) {
			t.Fatalf("%s replays %v, want %v", name, replay, got)
		}
	}
}

// readAll reads a part log from its start to its end (its run's end,
// which may come from another process).
func readAll(t *testing.T, who string, log *runs.PartLog) []runs.Part {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []runs.Part
	for last := -1; ; {
		parts, ended, err := log.Read(ctx, last)
		if err != nil {
			t.Fatalf("%s after %d parts: %v", who, len(got), err)
		}
		got = append(got, parts...)
		if len(parts) > 0 {
			last = parts[len(parts)-1].ID
		}
		if ended {
			return got
		}
	}
}

func partIDs(ps []runs.Part) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

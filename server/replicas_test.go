package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
	"github.com/superstep-dev/superstep/server"
)

// replica is one Studio process serving the API on the shared database:
// its own saver, registry, run log, queue and event log. Node b of its
// "linear" graph waits on g (shared by the replicas of a test: whichever
// runs the step waits).
func replica(t *testing.T, pool *pgxpool.Pool, id string, g *gate) *client {
	t.Helper()
	lin := engine.NewStateGraph[steps]()
	lin.AddNode("a", func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": "a"}, nil })
	lin.AddNode("b", func(ctx context.Context, _ steps) (engine.Output, error) {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return engine.Update{"log": "b"}, nil
	})
	lin.AddNode("c", func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": "c"}, nil })
	lin.AddSequence("a", "b", "c").AddEdge(engine.Start, "a").AddEdge("c", engine.End)
	linear, err := lin.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := riverq.New(pool, riverq.Config{ID: id, LeaseTTL: 2 * time.Second, ReapEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	events := riverq.NewEventLog(pool, nil)
	m, err := runs.NewManager(map[string]engine.Compiled{"linear": linear},
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)),
		runs.WithQueue(q), runs.WithEventLog(events), runs.WithRenewEvery(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Config{Runs: m, Assistants: pgthreads.NewAssistants(pool)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		_ = q.Shutdown(context.Background(), m, 0)
		events.Close()
	})
	return &client{t: t, base: srv.URL}
}

// TestStrategiesAcrossReplicas: a run held in step b on replica A; a
// second run for the thread arrives at replica B. Each multitask
// strategy does there what it does on one process.
func TestStrategiesAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{"reject", "interrupt", "rollback", "enqueue"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Schema(t, nil)
			g := newGate()
			a, b := replica(t, pool, "a", g), replica(t, pool, "b", g)
			thread := uuid.NewString()
			first := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"first"}}, "if_not_exists": "create"}, 200)
			<-g.entered
			body := map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"second"}}, "multitask_strategy": strategy}
			firstRun := fmt.Sprintf("/threads/%s/runs/%s", thread, first["run_id"])
			switch strategy {
			case "reject":
				b.json("POST", "/threads/"+thread+"/runs", body, 409)
				close(g.release)
				if got := a.json("GET", firstRun+"/join", nil, 200); fmt.Sprint(got["log"]) != "[first a b c]" {
					t.Fatalf("the first run ended with %v", got["log"])
				}
			case "interrupt", "rollback":
				done := make(chan map[string]any, 1)
				go func() { done <- b.json("POST", "/threads/"+thread+"/runs/wait", body, 200) }()
				// The second run reaches b only once the first is gone.
				select {
				case <-g.entered:
				case <-time.After(20 * time.Second):
					t.Fatal("the second run never started")
				}
				close(g.release)
				var got map[string]any
				select {
				case got = <-done:
				case <-time.After(20 * time.Second):
					t.Fatal("the second run did not end")
				}
				want := "[first a second a b c]" // the interrupted run's a stays
				if strategy == "rollback" {
					want = "[second a b c]"
				}
				if fmt.Sprint(got["log"]) != want {
					t.Fatalf("%s: the second run ended with %v, want %s", strategy, got["log"], want)
				}
				waitValues(t, a, thread, want)
				code, _, _ := b.do("GET", firstRun, nil)
				switch {
				case strategy == "rollback" && code != 404:
					t.Fatalf("the rolled-back run: GET = %d, want 404", code)
				case strategy == "interrupt":
					if r := b.json("GET", firstRun, nil, 200); r["status"] != "interrupted" {
						t.Fatalf("the first run is %v, want interrupted", r["status"])
					}
				}
			case "enqueue":
				second := b.json("POST", "/threads/"+thread+"/runs", body, 200)
				if second["status"] != "pending" {
					t.Fatalf("the enqueued run is %v, want pending", second["status"])
				}
				close(g.release)
				waitValues(t, b, thread, "[first a b c second a b c]")
			}
		})
	}
}

// waitValues waits until the thread is idle with the given log.
func waitValues(t *testing.T, c *client, thread, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		th := c.json("GET", "/threads/"+thread, nil, 200)
		st := c.json("GET", "/threads/"+thread+"/state", nil, 200)
		values, _ := st["values"].(map[string]any)
		got := fmt.Sprint(values["log"])
		if th["status"] == "idle" && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %v with log %s, want idle with %s", th["status"], got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRejectAtOnceOnTwoReplicas: two runs for one new thread arrive at two
// replicas at the same moment with reject: exactly one runs.
func TestRejectAtOnceOnTwoReplicas(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a, b := replica(t, pool, "a", g), replica(t, pool, "b", g)
	for range 5 {
		thread := uuid.NewString()
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i, c := range []*client{a, b} {
			wg.Go(func() {
				codes[i], _, _ = c.do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "multitask_strategy": "reject"})
			})
		}
		wg.Wait()
		if !(codes[0] == 200 && codes[1] == 409 || codes[0] == 409 && codes[1] == 200) {
			t.Fatalf("two runs at once with reject: %v, want one 200 and one 409", codes)
		}
		g.release <- struct{}{} // lets the one run's b go on
		<-g.entered
	}
}

// TestJoinStreamOnAnotherReplicaEndsWithTheRun: a client joining the
// stream of a run another replica executes gets the stream's end once the
// run has ended, not at once.
func TestJoinStreamOnAnotherReplicaEndsWithTheRun(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a, b := replica(t, pool, "a", g), replica(t, pool, "b", g)
	thread := uuid.NewString()
	run := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
	<-g.entered
	ended := make(chan time.Time, 1)
	go func() {
		code, _, body := b.do("GET", fmt.Sprintf("/threads/%s/runs/%s/stream", thread, run["run_id"]), nil)
		if code != 200 {
			t.Errorf("join stream = %d %s", code, body)
		}
		ended <- time.Now()
	}()
	select {
	case <-ended:
		t.Fatal("the joined stream ended while the run was still going on the other replica")
	case <-time.After(500 * time.Millisecond):
	}
	released := time.Now()
	close(g.release)
	select {
	case at := <-ended:
		if at.Before(released) {
			t.Fatal("the joined stream ended before the run did")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the joined stream did not end with the run")
	}
}

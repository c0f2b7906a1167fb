package server_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
	"github.com/superstep-dev/superstep/server"
)

// eachBackend runs test against a server keeping waiting runs in its
// memory, and against one whose run manager keeps them in Postgres (a
// river queue: pending runs, started by its workers).
func eachBackend(t *testing.T, test func(t *testing.T, newServer func(*gate) *client)) {
	t.Helper()
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, func(g *gate) *client { return newServer(t, g) })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, func(g *gate) *client { return newDurableServer(t, g, nil) })
	})
}

// newDurableServer is newServer on Postgres with a queue, as a Studio
// with a database serves the API.
func newDurableServer(t *testing.T, g *gate, set func(*server.Config)) *client {
	t.Helper()
	return durableReplica(t, pgtest.Schema(t, nil), "test", g, set).client
}

// durable is one Studio process serving the API on a shared database:
// its client, its queue and API, and stop, which stops it as SIGTERM does
// with no grace (its runs are handed back at once).
type durable struct {
	*client
	stop func()
	q    *riverq.Queue
	api  *server.API
}

// durableReplica is one Studio process serving the API on pool's
// database, with its own queue, event log and run manager.
func durableReplica(t *testing.T, pool *pgxpool.Pool, id string, g *gate, set func(*server.Config)) durable {
	t.Helper()
	return durableReplicaWith(t, pool, id, g, nil, set)
}

// durableReplicaWith is durableReplica with its queue's configuration
// adjusted by queue (the API's cron jobs, say) before it is made.
func durableReplicaWith(t *testing.T, pool *pgxpool.Pool, id string, g *gate, queue func(*riverq.Config), set func(*server.Config)) durable {
	t.Helper()
	qc := riverq.Config{ID: id, LeaseTTL: 2 * time.Second, ReapEvery: 100 * time.Millisecond}
	if queue != nil {
		queue(&qc)
	}
	q, err := riverq.New(pool, qc)
	if err != nil {
		t.Fatal(err)
	}
	events := riverq.NewEventLog(pool, nil)
	m, err := runs.NewManager(testGraphsOn(t, g, pgsaver.New(pool, nil)),
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)),
		runs.WithQueue(q), runs.WithEventLog(events), runs.WithRenewEvery(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	cfg := server.Config{Runs: m, Assistants: pgthreads.NewAssistants(pool)}
	if set != nil {
		set(&cfg)
	}
	api, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	var once sync.Once
	stop := func() {
		once.Do(func() {
			srv.Close()
			api.Close()
			_ = q.Shutdown(context.Background(), m, 0)
			events.Close()
		})
	}
	t.Cleanup(stop)
	return durable{client: &client{t: t, base: srv.URL}, stop: stop, q: q, api: api}
}

// TestQueuedRunsOutliveTheirReplica: runs enqueued and delayed on
// replica A, which stops while its run is held: replica B sees them
// pending, continues A's run and then starts them, in order.
func TestQueuedRunsOutliveTheirReplica(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a := durableReplica(t, pool, "a", g, nil)
	b := durableReplica(t, pool, "b", g, nil)
	thread := uuid.NewString()
	a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"first"}}, "if_not_exists": "create"}, 200)
	<-g.entered
	second := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"second"}}}, 200)
	third := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"third"}}, "after_seconds": 0.5}, 200)
	for _, r := range []map[string]any{second, third} {
		if got := b.json("GET", fmt.Sprintf("/threads/%s/runs/%s", thread, r["run_id"]), nil, 200); got["status"] != "pending" {
			t.Fatalf("replica B reads queued run %v as %v, want pending", r["run_id"], got["status"])
		}
	}
	if th := b.json("GET", "/threads/"+thread, nil, 200); th["status"] != "busy" {
		t.Fatalf("replica B reads the thread as %v, want busy", th["status"])
	}
	a.stop()
	// B takes the held run over: its b runs again there.
	<-g.entered
	close(g.release)
	waitValues(t, b.client, thread, "[first a b c second a b c third a b c]")
	for _, r := range b.list("GET", "/threads/"+thread+"/runs", nil, 200) {
		if r["status"] != "success" {
			t.Fatalf("run %v ended %v, want success", r["run_id"], r["status"])
		}
	}
}

// TestPendingRunCancelledOnAnotherReplica: a run queued on A and
// cancelled through B never runs, and both replicas read it as
// interrupted.
func TestPendingRunCancelledOnAnotherReplica(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a := durableReplica(t, pool, "a", g, nil)
	b := durableReplica(t, pool, "b", g, nil)
	thread := uuid.NewString()
	first := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
	<-g.entered
	queued := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"never"}}}, 200)
	path := fmt.Sprintf("/threads/%s/runs/%s", thread, queued["run_id"])
	if code, _, body := b.do("POST", path+"/cancel?wait=1", nil); code != 204 {
		t.Fatalf("cancel on B = %d %s, want 204", code, body)
	}
	for _, c := range []*client{a.client, b.client} {
		if got := c.json("GET", path, nil, 200); got["status"] != "interrupted" {
			t.Fatalf("the cancelled queued run reads %v, want interrupted", got["status"])
		}
	}
	close(g.release)
	if got := b.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, first["run_id"]), nil, 200); fmt.Sprint(got["log"]) != "[a b c]" {
		t.Fatalf("the thread's log is %v: the cancelled run must never run", got["log"])
	}
	waitValues(t, a.client, thread, "[a b c]")
	if got := a.json("GET", path+"/join", nil, 200); got["__error__"] == nil {
		t.Fatalf("join of the run cancelled before it started answered %v, want its error", got)
	}
}

// TestStreamOfAnEnqueuedRunOnADurableQueue: a client streaming a run
// that waits behind another gets its parts once it starts, and the end.
func TestStreamOfAnEnqueuedRunOnADurableQueue(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := newDurableServer(t, g, nil)
	thread := uuid.NewString()
	c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"first"}}, "if_not_exists": "create"}, 200)
	<-g.entered
	// The second run is queued before the first is let go.
	body := streamQueued(t, c, thread, "values", g.release)
	if !strings.Contains(body, "event: metadata") || !strings.Contains(body, `"log":["first","a","b","c","second","a","b","c"]`) {
		t.Fatalf("the queued run's stream lacks its parts:\n%s", body)
	}
	if strings.Contains(body, "event: error") {
		t.Fatalf("the queued run's stream failed:\n%s", body)
	}
}

// TestDelayedRunsRunOnceAcrossReplicas: delayed runs made on A, which
// stops before they are due, run on B, each exactly once.
func TestDelayedRunsRunOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	close(g.release)
	a := durableReplica(t, pool, "a", g, nil)
	b := durableReplica(t, pool, "b", g, nil)
	var threads, ids []string
	for range 4 {
		thread := uuid.NewString()
		run := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "after_seconds": 1}, 200)
		if run["status"] != "pending" {
			t.Fatalf("a delayed run is %v, want pending", run["status"])
		}
		threads, ids = append(threads, thread), append(ids, run["run_id"].(string))
	}
	a.stop()
	for i, thread := range threads {
		joined := b.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, ids[i]), nil, 200)
		if fmt.Sprint(joined["log"]) != "[a b c]" {
			t.Fatalf("thread %s: the delayed run ended with %v, want it run once", thread, joined["log"])
		}
		rs := b.list("GET", "/threads/"+thread+"/runs", nil, 200)
		if len(rs) != 1 || rs[0]["status"] != "success" {
			t.Fatalf("thread %s lists runs %v, want one, succeeded", thread, rs)
		}
	}
}

// TestQueuedRunStartedElsewhereStreamsHere: a client streams, through
// replica A, a run queued behind A's run; the queued run starts on B (A
// takes no jobs), and the client gets its parts all the same.
func TestQueuedRunStartedElsewhereStreamsHere(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a := durableReplica(t, pool, "a", g, nil)
	durableReplica(t, pool, "b", g, nil)
	thread := uuid.NewString()
	a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"first"}}, "if_not_exists": "create"}, 200)
	<-g.entered
	// A stops taking jobs: whatever starts next starts on B.
	if err := a.q.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := streamQueued(t, a.client, thread, []string{"values", "updates"}, g.release)
	for _, want := range []string{"event: metadata", "event: updates", `"log":["first","a","b","c","second","a","b","c"]`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the stream lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "event: error") {
		t.Fatalf("the stream failed:\n%s", body)
	}
}

// TestReadingAQueuedRunDoesNotWatchIt: reads of a queued run (get,
// list, a refused delete) leave nothing behind; the callers that wait on
// it (joins) share one watch, gone once the run leaves the queue.
func TestReadingAQueuedRunDoesNotWatchIt(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a := durableReplica(t, pool, "a", g, nil)
	b := durableReplica(t, pool, "b", g, nil)
	t.Cleanup(func() { close(g.release) }) // before the servers close
	thread := uuid.NewString()
	a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
	<-g.entered
	queued := a.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "after_seconds": 3600}, 200)
	path := fmt.Sprintf("/threads/%s/runs/%s", thread, queued["run_id"])
	for range 20 {
		b.json("GET", path, nil, 200)
		b.list("GET", "/threads/"+thread+"/runs", nil, 200)
		if code, _, _ := b.do("DELETE", path, nil); code != 409 {
			t.Fatalf("DELETE of a queued run = %d, want 409", code)
		}
	}
	if n := server.WatchedRuns(b.api); n != 0 {
		t.Fatalf("after 60 reads on B, B watches %d runs: reads must not watch", n)
	}
	joined := make(chan int, 2)
	for range 2 {
		go func() {
			code, _, _ := b.do("GET", path+"/join", nil)
			joined <- code
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for server.WatchedRuns(b.api) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the joins on B watch nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := server.WatchedRuns(b.api); n != 1 {
		t.Fatalf("two joins of one run watch %d runs, want one shared", n)
	}
	if code, _, body := b.do("POST", path+"/cancel?wait=1", nil); code != 204 {
		t.Fatalf("cancel = %d %s", code, body)
	}
	for range 2 {
		select {
		case code := <-joined:
			if code != 200 {
				t.Fatalf("a join of the cancelled queued run = %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a join of the cancelled queued run never answered")
		}
	}
	if n := server.WatchedRuns(b.api); n != 0 {
		t.Fatalf("after the run left the queue B still watches %d runs", n)
	}
}

// TestRefusedDelayedRunLeavesNoThread: a delayed run on a thread to
// create, refused because the queue is full, leaves no empty thread.
// (Not parallel: it changes the queue's limits.)
func TestRefusedDelayedRunLeavesNoThread(t *testing.T) {
	t.Cleanup(server.SetQueueLimits(100, 1))
	c := newDurableServer(t, nil, nil)
	first := uuid.NewString()
	c.json("POST", "/threads/"+first+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "after_seconds": 3600}, 200)
	second := uuid.NewString()
	if code, _, body := c.do("POST", "/threads/"+second+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "after_seconds": 3600}); code != 409 {
		t.Fatalf("a delayed run past the queue's limit = %d %s, want 409", code, body)
	}
	if code, _, body := c.do("GET", "/threads/"+second, nil); code != 404 {
		t.Fatalf("the refused run's thread: GET = %d %s, want 404 (never made)", code, body)
	}
}

// streamQueued streams, through c, a second run of "linear" on thread
// (whose first run holds), waits until it is queued, lets the first run
// go (closing release) and returns the stream's body once it ends.
func streamQueued(t *testing.T, c *client, thread string, modes any, release chan struct{}) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		_, _, body := c.do("POST", "/threads/"+thread+"/runs/stream", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"second"}}, "stream_mode": modes})
		got <- string(body)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.list("GET", "/threads/"+thread+"/runs?status=pending", nil, 200)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the streamed run never showed as pending")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	select {
	case body := <-got:
		return body
	case <-time.After(20 * time.Second):
		t.Fatal("the stream of the queued run did not end")
		return ""
	}
}

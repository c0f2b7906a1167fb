package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
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

// liveStream reads an event stream as it comes.
type liveStream struct {
	t      *testing.T
	mu     sync.Mutex
	evs    []sse
	done   chan struct{}
	cancel context.CancelFunc
}

// open starts a request whose answer is an event stream; lastID, if not
// "", is sent as Last-Event-ID.
func (c *client) open(method, path string, body any, lastID string) *liveStream {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		msg, _ := io.ReadAll(res.Body)
		c.t.Fatalf("%s %s = %d %s", method, path, res.StatusCode, msg)
	}
	s := &liveStream{t: c.t, done: make(chan struct{}), cancel: cancel}
	c.t.Cleanup(cancel)
	go func() {
		defer close(s.done)
		defer res.Body.Close()
		var cur sse
		br := bufio.NewReader(res.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if cur.event != "" {
					s.mu.Lock()
					s.evs = append(s.evs, cur)
					s.mu.Unlock()
				}
				cur = sse{}
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data += line[6:]
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			}
		}
	}()
	return s
}

// upTo waits until the stream has given n events (it reads from another
// goroutine) and returns them.
func (s *liveStream) upTo(n int) []sse {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		evs := slices.Clone(s.evs)
		s.mu.Unlock()
		if len(evs) >= n {
			return evs
		}
		select {
		case <-s.done:
			s.t.Fatalf("the stream ended after %d events %v, want %d", len(evs), names(evs), n)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the stream gave %d events %v in 20 s, want %d", len(evs), names(evs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// until waits until the stream has given an event for which match
// holds, and returns the events up to it.
func (s *liveStream) until(match func(sse) bool) []sse {
	s.t.Helper()
	for n := 1; ; n++ {
		evs := s.upTo(n)
		if match(evs[n-1]) {
			return evs[:n]
		}
	}
}

// all waits for the stream's end and returns every event it gave.
func (s *liveStream) all() []sse {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.t.Fatal("the stream did not end in 20 s")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.evs)
}

// sameEvents fails unless got is want, event by event: name, id, data.
func sameEvents(t *testing.T, what string, got, want []sse) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events %v, want %d %v", what, len(got), names(got), len(want), names(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// TestStreamPartsAcrossReplicas: a resumable stream of a run executing on
// replica A, held in node b. On replica B, a client replaying from its
// start, one joining from now and one reconnecting mid-run get the parts
// A's own client gets, live, with the same names, ids and data; once the
// run has ended, a replay on B gets the kept parts as one on A does.
func TestStreamPartsAcrossReplicas(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	g := newGate()
	a, b := replica(t, pool, "a", g), replica(t, pool, "b", g)
	thread := uuid.NewString()
	onA := a.open("POST", "/threads/"+thread+"/runs/stream", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"go"}},
		"if_not_exists": "create", "stream_mode": []string{"values", "updates", "debug"}, "stream_resumable": true}, "")
	var meta struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(onA.upTo(1)[0].data), &meta); err != nil || meta.RunID == "" {
		t.Fatalf("the first event %+v names no run: %v", onA.upTo(1)[0], err)
	}
	<-g.entered
	// Node b has begun: its task part (debug) is the last the run
	// streams before b ends.
	planned := onA.until(func(e sse) bool {
		return e.event == "debug" && strings.Contains(e.data, `"name":"b"`) && strings.Contains(e.data, `"type":"task"`)
	})
	path := fmt.Sprintf("/threads/%s/runs/%s/stream", thread, meta.RunID)
	replay := b.open("GET", path, nil, "0") // had the metadata, wants every part
	joined := b.open("GET", path, nil, "")  // from now on
	if got := replay.upTo(len(planned) - 1); got[len(got)-1] != planned[len(planned)-1] {
		t.Fatalf("replica B's replay got %+v while the run waits in b, want %+v", got[len(got)-1], planned[len(planned)-1])
	}
	// A reconnect: a client of B that saw part of the stream goes away
	// and comes back with the last id it saw.
	first := b.open("GET", path, nil, "-1")
	cut := first.upTo(3)[:3]
	first.cancel()
	resumed := b.open("GET", path, nil, cut[2].id)
	// The joined stream is live: it has its metadata, no part before b.
	if evs := joined.upTo(1); evs[0].event != "metadata" {
		t.Fatalf("the join from now began with %+v", evs[0])
	}
	close(g.release)
	want := onA.all()
	if i := slices.IndexFunc(want, func(e sse) bool { return e.event == "values" && e.data == `{"log":["go","a","b","c"]}` }); i < 0 {
		t.Fatalf("A's own client got %v, without the run's last values", names(want))
	}
	sameEvents(t, "a replay from the start on B", replay.all(), want[1:])
	sameEvents(t, "a reconnect on B", append(cut, resumed.all()...), want)
	got := joined.all()
	if len(got) < 2 {
		t.Fatalf("the join from now on B got %v: none of the parts after b", names(got))
	}
	sameEvents(t, "a join from now on B", got[1:], want[len(want)-len(got)+1:])
	if got[0] != want[0] {
		t.Fatalf("the join's metadata %+v, want %+v", got[0], want[0])
	}
	// Ended: both replicas replay the kept parts alike.
	sameEvents(t, "a replay on B after the end", b.open("GET", path, nil, "-1").all(), want)
	sameEvents(t, "a replay on A after the end", a.open("GET", path, nil, "-1").all(), want)
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/server"
)

type steps struct {
	Log    []string `json:"log" reduce:"append"`
	Answer string   `json:"answer"`
}

// gate holds node "b" of the linear graph until released.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

// testGraphs: "linear" is a → b → c (b waits on the gate when one is
// given); "approval" asks a question with an interrupt, then records the
// answer.
func testGraphs(t *testing.T, g *gate) map[string]engine.Compiled {
	t.Helper()
	return testGraphsOn(t, g, checkpoints.NewMemory())
}

// testGraphsOn is testGraphs saving to saver.
func testGraphsOn(t *testing.T, g *gate, saver checkpoints.Saver) map[string]engine.Compiled {
	t.Helper()
	lin := engine.NewStateGraph[steps]()
	lin.AddNode("a", func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": "a"}, nil })
	lin.AddNode("b", func(ctx context.Context, _ steps) (engine.Output, error) {
		if g != nil {
			g.entered <- struct{}{}
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return engine.Update{"log": "b"}, nil
	})
	lin.AddNode("c", func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": "c"}, nil })
	lin.AddSequence("a", "b", "c").AddEdge(engine.Start, "a").AddEdge("c", engine.End)
	linear, err := lin.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	ap := engine.NewStateGraph[steps]()
	ap.AddNode("ask", func(ctx context.Context, _ steps) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, map[string]any{"question": "ship it?"})
		if err != nil {
			return nil, err
		}
		return engine.Update{"answer": fmt.Sprint(a), "log": "asked"}, nil
	})
	ap.AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	approval, err := ap.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]engine.Compiled{"linear": linear, "approval": approval}
}

type client struct {
	t    *testing.T
	base string
}

func newServer(t *testing.T, g *gate) *client {
	t.Helper()
	return newServerWith(t, g, nil)
}

// newServerWith is newServer with the API's config adjusted by set.
func newServerWith(t *testing.T, g *gate, set func(*server.Config)) *client {
	t.Helper()
	m, err := runs.NewManager(testGraphs(t, g))
	if err != nil {
		t.Fatal(err)
	}
	return serveManager(t, m, set)
}

// serveManager serves the API over m, its config adjusted by set (when
// not nil), until the test ends, when it closes m too.
func serveManager(t *testing.T, m *runs.Manager, set func(*server.Config)) *client {
	t.Helper()
	cfg := server.Config{Runs: m}
	if set != nil {
		set(&cfg)
	}
	api, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		m.Close()
	})
	return &client{t: t, base: srv.URL}
}

// do sends a JSON request and returns the status, headers and body.
func (c *client) do(method, path string, body any) (int, http.Header, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, res.Header, b
}

func (c *client) json(method, path string, body any, want int) map[string]any {
	c.t.Helper()
	code, _, b := c.do(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, b, err)
	}
	return out
}

type sse struct {
	event, data, id string
}

// readSSE parses a whole event stream.
func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			cur.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		}
	}
	return out
}

func (c *client) stream(path string, body any) (http.Header, []sse) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(c.base+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		msg, _ := io.ReadAll(res.Body)
		c.t.Fatalf("POST %s = %d %s", path, res.StatusCode, msg)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		c.t.Fatalf("POST %s: Content-Type %q, want text/event-stream", path, ct)
	}
	return res.Header, readSSE(c.t, res.Body)
}

func names(evs []sse) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.event
	}
	return out
}

func TestStreamRunOnANewThread(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	thread := uuid.NewString()
	h, evs := c.stream("/threads/"+thread+"/runs/stream", map[string]any{
		"assistant_id": "linear", "input": map[string]any{"log": []string{"start"}},
		"stream_mode": []string{"values", "updates"}, "if_not_exists": "create"})
	if len(evs) == 0 || evs[0].event != "metadata" {
		t.Fatalf("events %v: the first must be metadata", names(evs))
	}
	var meta map[string]any
	_ = json.Unmarshal([]byte(evs[0].data), &meta)
	runID, _ := meta["run_id"].(string)
	if meta["thread_id"] != thread || runID == "" {
		t.Fatalf("metadata %v: want run_id and thread_id %s", meta, thread)
	}
	if got, want := h.Get("Content-Location"), "/threads/"+thread+"/runs/"+runID; got != want {
		t.Fatalf("Content-Location %q, want %q", got, want)
	}
	want := []string{"metadata", "values", "updates", "values", "updates", "values", "updates", "values"}
	if got := names(evs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	if evs[len(evs)-1].data != `{"log":["start","a","b","c"]}` {
		t.Fatalf("last values %s", evs[len(evs)-1].data)
	}
	if evs[2].data != `{"a":{"log":"a"}}` {
		t.Fatalf("first update %s", evs[2].data)
	}
	for i, e := range evs {
		if e.id != fmt.Sprint(i) {
			t.Fatalf("event %d has id %q: ids count from 0, one per event", i, e.id)
		}
	}
	run := c.json("GET", "/threads/"+thread+"/runs/"+runID, nil, 200)
	as := c.json("GET", "/assistants/linear", nil, 200)
	if run["status"] != "success" || run["assistant_id"] != as["assistant_id"] || run["multitask_strategy"] != "enqueue" {
		t.Fatalf("run %v: want success, the graph's assistant %v, enqueue", run, as["assistant_id"])
	}
}

func TestUnknownThreadWithoutIfNotExistsIs404(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	code, _, b := c.do("POST", "/threads/"+uuid.NewString()+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}})
	if code != 404 || !strings.Contains(string(b), "if_not_exists") {
		t.Fatalf("run on an unknown thread = %d %s, want 404 saying how to create it", code, b)
	}
}

func TestBadRunBodiesName422Fields(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	path := "/threads/" + uuid.NewString() + "/runs"
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"assistant_id": "linear", "input": map[string]any{}, "command": map[string]any{"resume": 1}, "if_not_exists": "create"}, "input"},
		{map[string]any{"assistant_id": "linear", "input": []int{1}, "if_not_exists": "create"}, "input"},
		{map[string]any{"assistant_id": "linear", "input": map[string]any{}, "stream_mode": "events", "if_not_exists": "create"}, "stream_mode"},
		{map[string]any{"assistant_id": "linear", "input": map[string]any{}, "multitask_strategy": "later", "if_not_exists": "create"}, "multitask_strategy"},
		{map[string]any{"assistant_id": "linear", "input": map[string]any{}, "interrupt_before": "a", "if_not_exists": "create"}, "interrupt_before"},
		{map[string]any{"assistant_id": "linear", "input": map[string]any{}, "config": map[string]any{"recursion_limit": 0}, "if_not_exists": "create"}, "config.recursion_limit"},
		{map[string]any{"assistant_id": "linear", "command": map[string]any{"jump": "a"}, "if_not_exists": "create"}, "command.jump"},
	} {
		code, _, b := c.do("POST", path, tc.body)
		if code != 422 || !strings.Contains(string(b), `"detail":"`+tc.field) {
			t.Errorf("body %v = %d %s, want 422 naming %s", tc.body, code, b, tc.field)
		}
	}
	code, _, b := c.do("POST", "/threads/not%20an%20id/runs", map[string]any{"assistant_id": "linear"})
	if code != 422 || !strings.Contains(string(b), "thread_id") {
		t.Errorf("a thread id that is no UUID = %d %s, want 422", code, b)
	}
	code, _, b = c.do("POST", path, map[string]any{"assistant_id": "nope", "input": map[string]any{}, "if_not_exists": "create"})
	if code != 404 {
		t.Errorf("unknown assistant = %d %s, want 404", code, b)
	}
}

func TestWaitAnswersValuesAndInterruptsThenResumeByID(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	thread := uuid.NewString()
	got := c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{}, "if_not_exists": "create"}, 200)
	ints, _ := got["__interrupt__"].([]any)
	if len(ints) != 1 {
		t.Fatalf("wait at an interrupt answered %v, want one __interrupt__", got)
	}
	first, _ := ints[0].(map[string]any)
	id, _ := first["id"].(string)
	if v, _ := first["value"].(map[string]any); v["question"] != "ship it?" || id == "" {
		t.Fatalf("interrupt %v: want the question and an id", first)
	}
	got = c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": map[string]any{id: "yes"}}}, 200)
	if got["answer"] != "yes" || got["__interrupt__"] != nil {
		t.Fatalf("resume by id answered %v, want answer yes and no interrupt", got)
	}
}

func TestRejectStrategyAnswers409WhileARunGoesOn(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := newServer(t, g)
	thread := uuid.NewString()
	first := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
	<-g.entered
	code, _, b := c.do("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "multitask_strategy": "reject"})
	if code != 409 {
		t.Fatalf("second run with reject = %d %s, want 409", code, b)
	}
	close(g.release)
	joined := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, first["run_id"]), nil, 200)
	if fmt.Sprint(joined["log"]) != "[a b c]" {
		t.Fatalf("join answered %v, want the finished log", joined)
	}
}

func TestEnqueuedRunsRunInOrderAfterTheActiveOne(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"1"}}, "if_not_exists": "create"}, 200)
		<-g.entered
		second := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"2"}}}, 200)
		third := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"3"}}, "multitask_strategy": "enqueue"}, 200)
		if second["status"] != "pending" || third["status"] != "pending" {
			t.Fatalf("queued runs %v %v, want pending", second["status"], third["status"])
		}
		list := c.do
		_ = list
		close(g.release)
		joined := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, third["run_id"]), nil, 200)
		if got := fmt.Sprint(joined["log"]); got != "[1 a b c 2 a b c 3 a b c]" {
			t.Fatalf("after three runs the log is %s, want them in order", got)
		}
		for _, r := range []map[string]any{second, third} {
			if got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s", thread, r["run_id"]), nil, 200); got["status"] != "success" {
				t.Fatalf("queued run %v ended %v", r["run_id"], got["status"])
			}
		}
	})
}

func TestRollbackAndInterruptStrategiesStopTheActiveRun(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		for _, tc := range []struct {
			strategy, status, log string
		}{
			// rollback: the stopped run and its checkpoints are gone.
			{"rollback", "", "[kept a b c new a b c]"},
			// interrupt: the stopped run keeps what it saved (its "a").
			{"interrupt", "interrupted", "[kept a b c old a new a b c]"},
		} {
			t.Run(tc.strategy, func(t *testing.T) {
				t.Parallel()
				g := newGate()
				c := newServer(g)
				thread := uuid.NewString()
				go func() { <-g.entered; g.release <- struct{}{} }() // the first run passes b
				c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"kept"}}, "if_not_exists": "create"}, 200)
				old := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"old"}}}, 200)
				<-g.entered // the old run waits in b
				next := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"new"}}, "multitask_strategy": tc.strategy}, 200)
				<-g.entered
				close(g.release)
				joined := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, next["run_id"]), nil, 200)
				if got := fmt.Sprint(joined["log"]); got != tc.log {
					t.Fatalf("log after %s: %s, want %s", tc.strategy, got, tc.log)
				}
				code, _, b := c.do("GET", fmt.Sprintf("/threads/%s/runs/%s", thread, old["run_id"]), nil)
				if tc.status == "" {
					if code != 404 {
						t.Fatalf("the rolled back run: GET = %d %s, want 404", code, b)
					}
					return
				}
				var run map[string]any
				_ = json.Unmarshal(b, &run)
				if code != 200 || run["status"] != tc.status {
					t.Fatalf("the interrupted run: GET = %d %s, want status %s", code, b, tc.status)
				}
			})
		}
	})
}

// TestResumableStreamReplaysAfterTheLastEventID drops a resumable stream
// after a few events and rejoins with the last id seen: every event
// arrives exactly once.
func TestResumableStreamReplaysAfterTheLastEventID(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := newServer(t, g)
	thread := uuid.NewString()
	b, _ := json.Marshal(map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create",
		"stream_mode": []string{"values", "updates"}, "stream_resumable": true, "on_disconnect": "continue"})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/threads/"+thread+"/runs/stream", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	loc := res.Header.Get("Location")
	if !strings.HasSuffix(loc, "/stream") {
		t.Fatalf("a resumable stream's Location is %q, want the run's stream path", loc)
	}
	// Read what the run streams before node b lets it go on: metadata,
	// the update of a, the values after it (an empty input streams no
	// values).
	<-g.entered
	br := bufio.NewReader(res.Body)
	var seen []sse
	var cur sse
	for len(seen) < 3 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if cur.event != "" {
				seen = append(seen, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		case strings.HasPrefix(line, "id: "):
			cur.id = line[4:]
		}
	}
	cancel()
	res.Body.Close()
	close(g.release)
	last := seen[len(seen)-1].id
	req2, _ := http.NewRequest("GET", c.base+loc, nil)
	req2.Header.Set("Last-Event-ID", last)
	res2, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	rest := readSSE(t, res2.Body)
	all := append(seen, rest...)
	for i, e := range all {
		if e.id != fmt.Sprint(i) {
			t.Fatalf("events after reconnect %v: event %d has id %q; every event once, in order", names(all), i, e.id)
		}
	}
	if all[len(all)-1].data != `{"log":["a","b","c"]}` {
		t.Fatalf("the run's last values %s", all[len(all)-1].data)
	}
}

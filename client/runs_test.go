package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/client"
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

func logNode(name string) func(context.Context, steps) (engine.Output, error) {
	return func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": name}, nil }
}

func askNode(ctx context.Context, _ steps) (engine.Output, error) {
	a, err := engine.Interrupt(ctx, map[string]any{"question": "ship it?"})
	if err != nil {
		return nil, err
	}
	return engine.Update{"answer": fmt.Sprint(a), "log": "asked"}, nil
}

// runGraphs: "linear" is a → b → c (b waits on the gate when one is
// given); "approval" asks with an interrupt, then records the answer;
// "nested" runs "pre" then the subgraph "sub" (which asks, as approval
// does); "fails" fails in its only node.
func runGraphs(t *testing.T, g *gate) map[string]engine.Compiled {
	t.Helper()
	saver := checkpoints.NewMemory()
	compile := func(sg *engine.StateGraph[steps], name string) engine.Compiled {
		c, err := sg.Compile(engine.CompileOptions{Checkpointer: saver, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	lin := engine.NewStateGraph[steps]()
	lin.AddNode("a", logNode("a"))
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
	lin.AddNode("c", logNode("c"))
	lin.AddSequence("a", "b", "c").AddEdge(engine.Start, "a").AddEdge("c", engine.End)
	ap := engine.NewStateGraph[steps]()
	ap.AddNode("ask", askNode).AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	sub := engine.NewStateGraph[steps]()
	sub.AddNode("ask", askNode).AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	nested := engine.NewStateGraph[steps]()
	nested.AddNode("pre", logNode("pre")).AddSubgraph("sub", compile(sub, "sub"))
	nested.AddSequence(engine.Start, "pre", "sub", engine.End)
	fails := engine.NewStateGraph[steps]()
	fails.AddNode("boom", func(context.Context, steps) (engine.Output, error) { return nil, errors.New("the tank is empty") })
	fails.AddEdge(engine.Start, "boom").AddEdge("boom", engine.End)
	return map[string]engine.Compiled{"linear": compile(lin, "linear"), "approval": compile(ap, "approval"),
		"nested": compile(nested, "nested"), "fails": compile(fails, "fails")}
}

// serveGraphs starts a real API server over runGraphs and returns a
// client of it (made with opts).
func serveGraphs(t *testing.T, g *gate, opts ...client.Option) *client.Client {
	t.Helper()
	m, err := runs.NewManager(runGraphs(t, g))
	if err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Config{Runs: m})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		m.Close()
	})
	return newClient(t, srv.URL, opts...)
}

func create() *client.RunCreate {
	return &client.RunCreate{Input: map[string]any{}, IfNotExists: "create"}
}

func statusOf(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

func TestWaitAnswersInterruptsThenResumeByID(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	ctx := context.Background()
	thread := uuid.NewString()
	res, err := c.Runs.Wait(ctx, thread, "approval", create())
	if err != nil {
		t.Fatal(err)
	}
	if res.ThreadID != thread || res.RunID == "" {
		t.Fatalf("Wait named run %q of thread %q, want a run of %s", res.RunID, res.ThreadID, thread)
	}
	if len(res.Interrupts) != 1 || res.Interrupts[0].ID == "" || fmt.Sprint(res.Interrupts[0].Value) != "map[question:ship it?]" {
		t.Fatalf("interrupts %+v: want the question with an id", res.Interrupts)
	}
	if _, ok := res.Values["__interrupt__"]; ok {
		t.Fatalf("values %v still hold __interrupt__", res.Values)
	}
	run, err := c.Runs.Get(ctx, thread, res.RunID)
	if err != nil || run.Status != "success" || run.ThreadID != thread {
		t.Fatalf("Get the waited run = %+v, %v; want it, success", run, err)
	}
	res2, err := c.Runs.Wait(ctx, thread, "approval", &client.RunCreate{Command: &client.Command{Resume: map[string]any{res.Interrupts[0].ID: "yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Values["answer"] != "yes" || len(res2.Interrupts) != 0 || res2.RunID == res.RunID {
		t.Fatalf("resume by id answered %+v, want answer yes, no interrupt, a new run", res2)
	}
}

func TestWaitReportsARunsFailureAsRunError(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	_, err := c.Runs.Wait(context.Background(), uuid.NewString(), "fails", create())
	var re *client.RunError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "the tank is empty") {
		t.Fatalf("Wait on a failing graph = %v, want a *RunError with the node's error", err)
	}
	if _, err := c.Runs.Wait(context.Background(), uuid.NewString(), "nope", create()); statusOf(err) != 404 {
		t.Fatalf("Wait with an unknown assistant = %v, want a 404 *Error", err)
	}
}

// TestWaitToleratesKeepAliveNewlines reads an answer as a server that
// waited a while writes it: newlines first, then the body.
func TestWaitToleratesKeepAliveNewlines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want string
	}{
		{"\n\n\n" + `{"log":["x"]}`, "map[log:[x]]"},
		{"\n\n" + `{"__error__":{"error":"GraphError","message":"late failure"}}`, "GraphError: late failure"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Location", "/threads/t1/runs/r1")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			for _, b := range []byte(tc.body) {
				_, _ = w.Write([]byte{b})
				w.(http.Flusher).Flush()
			}
		}))
		c := newClient(t, srv.URL)
		res, err := c.Runs.Join(context.Background(), "t1", "r1")
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = fmt.Sprint(res.Values)
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("answer %q read as %q, want %q", tc.body, got, tc.want)
		}
		srv.Close()
	}
}

func TestBackgroundRunListGetCancelDelete(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := serveGraphs(t, g)
	ctx := context.Background()
	thread := uuid.NewString()
	run, err := c.Runs.Create(ctx, thread, "linear", &client.RunCreate{Input: map[string]any{"log": []string{"go"}}, IfNotExists: "create", Metadata: map[string]any{"who": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if run.ThreadID != thread || run.RunID == "" || run.Metadata["who"] != "test" {
		t.Fatalf("Create = %+v: want a run of %s with the metadata", run, thread)
	}
	if _, err := c.Runs.Create(ctx, thread, "linear", &client.RunCreate{Input: map[string]any{}, MultitaskStrategy: "reject"}); statusOf(err) != 409 {
		t.Fatalf("a second run with reject = %v, want a 409 *Error", err)
	}
	got, err := c.Runs.Get(ctx, thread, run.RunID)
	if err != nil || got.Status != "running" {
		t.Fatalf("Get = %+v, %v; want running", got, err)
	}
	if err := c.Runs.Cancel(ctx, thread, run.RunID, &client.CancelOptions{Wait: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Runs.Get(ctx, thread, run.RunID); err != nil || got.Status != "interrupted" {
		t.Fatalf("after Cancel, Get = %+v, %v; want interrupted", got, err)
	}
	go func() { <-g.entered; g.release <- struct{}{} }()
	second, err := c.Runs.Wait(ctx, thread, "linear", &client.RunCreate{Input: map[string]any{"log": []string{"again"}}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.Runs.List(ctx, thread, nil)
	if err != nil || len(list) != 2 || list[0].RunID != second.RunID || list[1].RunID != run.RunID {
		t.Fatalf("List = %+v, %v; want the two runs, newest first", list, err)
	}
	if page, err := c.Runs.List(ctx, thread, &client.ListRunsOptions{Status: "interrupted"}); err != nil || len(page) != 1 || page[0].RunID != run.RunID {
		t.Fatalf("List interrupted = %+v, %v; want the cancelled run", page, err)
	}
	joined, err := c.Runs.Join(ctx, thread, second.RunID)
	if err != nil || fmt.Sprint(joined.Values["log"]) != fmt.Sprint(second.Values["log"]) {
		t.Fatalf("Join of an ended run = %+v, %v; want its values %v", joined, err, second.Values)
	}
	if err := c.Runs.Delete(ctx, thread, run.RunID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Runs.Get(ctx, thread, run.RunID); statusOf(err) != 404 {
		t.Fatalf("Get a deleted run = %v, want 404", err)
	}
	if err := c.Runs.Cancel(ctx, thread, second.RunID, nil); statusOf(err) != 409 {
		t.Fatalf("Cancel an ended run = %v, want 409", err)
	}
}

// drain reads a stream to its end.
func drain(t *testing.T, s *client.Stream) []client.Event {
	t.Helper()
	var out []client.Event
	for s.Next() {
		out = append(out, s.Event())
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return out
}

func eventNames(evs []client.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return strings.Join(out, ",")
}

func TestStreamReadsEveryEvent(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	thread := uuid.NewString()
	s, err := c.Runs.Stream(context.Background(), thread, "linear", &client.RunCreate{Input: map[string]any{"log": []string{"start"}},
		StreamMode: []string{"values", "updates"}, IfNotExists: "create"})
	if err != nil {
		t.Fatal(err)
	}
	evs := drain(t, s)
	if want := "metadata,values,updates,values,updates,values,updates,values"; eventNames(evs) != want {
		t.Fatalf("events %s, want %s", eventNames(evs), want)
	}
	var meta struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(evs[0].Data, &meta)
	if s.ThreadID != thread || s.RunID == "" || meta.RunID != s.RunID {
		t.Fatalf("stream names run %q of %q, metadata %s", s.RunID, s.ThreadID, evs[0].Data)
	}
	if last := evs[len(evs)-1]; string(last.Data) != `{"log":["start","a","b","c"]}` || last.ID != "7" {
		t.Fatalf("last event %+v", last)
	}
	// A failing run ends its stream with an error event, not a broken
	// stream.
	s, err = c.Runs.Stream(context.Background(), uuid.NewString(), "fails", create())
	if err != nil {
		t.Fatal(err)
	}
	evs = drain(t, s)
	if last := evs[len(evs)-1]; last.Event != "error" || !strings.Contains(string(last.Data), "the tank is empty") {
		t.Fatalf("a failing run streamed %s, last %s", eventNames(evs), last.Data)
	}
	if _, err := c.Runs.Stream(context.Background(), uuid.NewString(), "linear", &client.RunCreate{Input: map[string]any{}}); statusOf(err) != 404 {
		t.Fatalf("a stream on an unknown thread = %v, want a 404 *Error before any event", err)
	}
}

// dropper cuts the first POST stream's connection after a number of
// events, as a flaky network would, and records the requests.
type dropper struct {
	after int
	mu    sync.Mutex
	seen  []string
}

func (d *dropper) RoundTrip(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.seen = append(d.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Last-Event-ID"))
	d.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/runs/stream") {
		resp.Body = &cutBody{rc: resp.Body, left: d.after}
	}
	return resp, err
}

// cutBody passes left events through, then closes the connection and
// fails as a reset connection does.
type cutBody struct {
	rc   io.ReadCloser
	left int
	buf  []byte
	prev byte
}

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		b.rc.Close()
		return 0, io.ErrUnexpectedEOF
	}
	n := 0
	for n < len(p) && b.left > 0 {
		if len(b.buf) == 0 {
			one := make([]byte, 1)
			if _, err := io.ReadFull(b.rc, one); err != nil {
				return n, err
			}
			b.buf = one
		}
		p[n] = b.buf[0]
		b.buf = b.buf[1:]
		if p[n] == '\n' && b.prev == '\n' {
			b.left--
		}
		b.prev = p[n]
		n++
	}
	return n, nil
}

func (b *cutBody) Close() error { return b.rc.Close() }

// TestResumableStreamSurvivesADroppedConnection cuts a resumable stream
// after three events while the run waits in b: the stream reconnects with
// the last event's id and every event arrives once, in order.
func TestResumableStreamSurvivesADroppedConnection(t *testing.T) {
	t.Parallel()
	g := newGate()
	d := &dropper{after: 3}
	c := serveGraphs(t, g, client.WithHTTPClient(&http.Client{Transport: d}))
	thread := uuid.NewString()
	s, err := c.Runs.Stream(context.Background(), thread, "linear", &client.RunCreate{Input: map[string]any{}, IfNotExists: "create",
		StreamMode: []string{"values", "updates"}, StreamResumable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var evs []client.Event
	for len(evs) < 3 && s.Next() {
		evs = append(evs, s.Event())
	}
	<-g.entered
	close(g.release)
	evs = append(evs, drain(t, s)...)
	for i, e := range evs {
		if e.ID != fmt.Sprint(i) {
			t.Fatalf("events %s: event %d has id %q; want every event once, in order", eventNames(evs), i, e.ID)
		}
	}
	if last := evs[len(evs)-1]; string(last.Data) != `{"log":["a","b","c"]}` {
		t.Fatalf("the last event %s, want the final values", last.Data)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	want := "GET /threads/" + thread + "/runs/" + s.RunID + "/stream 2"
	if len(d.seen) != 2 || d.seen[1] != want {
		t.Fatalf("requests %q, want the stream then %q", d.seen, want)
	}
}

// TestStreamThatIsNotResumableReportsTheBreak: without StreamResumable
// a dropped connection is the stream's error, not a silent end.
func TestStreamThatIsNotResumableReportsTheBreak(t *testing.T) {
	t.Parallel()
	g := newGate()
	d := &dropper{after: 2}
	c := serveGraphs(t, g, client.WithHTTPClient(&http.Client{Transport: d}))
	s, err := c.Runs.Stream(context.Background(), uuid.NewString(), "linear", &client.RunCreate{Input: map[string]any{}, IfNotExists: "create", StreamMode: []string{"updates"}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s.Next() {
		n++
	}
	close(g.release)
	if n != 2 || s.Err() == nil || !errors.Is(s.Err(), io.ErrUnexpectedEOF) {
		t.Fatalf("read %d events, Err %v; want 2 and the broken connection", n, s.Err())
	}
}

func TestJoinStreamFollowsABackgroundRun(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := serveGraphs(t, g)
	ctx := context.Background()
	thread := uuid.NewString()
	run, err := c.Runs.Create(ctx, thread, "linear", &client.RunCreate{Input: map[string]any{}, IfNotExists: "create",
		StreamMode: []string{"updates"}, StreamResumable: true})
	if err != nil {
		t.Fatal(err)
	}
	<-g.entered
	// From the start: every event the run sent so far, then the rest.
	s, err := c.Runs.JoinStream(ctx, thread, run.RunID, &client.JoinStreamOptions{LastEventID: "-1", StreamMode: []string{"updates"}})
	if err != nil {
		t.Fatal(err)
	}
	close(g.release)
	evs := drain(t, s)
	if eventNames(evs) != "metadata,updates,updates,updates" || string(evs[3].Data) != `{"c":{"log":"c"}}` {
		t.Fatalf("joined events %s, last %s", eventNames(evs), evs[len(evs)-1].Data)
	}
	// After an id: only what follows.
	s, err = c.Runs.JoinStream(ctx, thread, run.RunID, &client.JoinStreamOptions{LastEventID: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if evs := drain(t, s); len(evs) != 1 || evs[0].ID != "3" {
		t.Fatalf("join after event 2 gave %+v, want event 3 only", evs)
	}
}

// TestRunCreateSendsEveryField checks the body each option becomes, as
// the API names it.
func TestRunCreateSendsEveryField(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = nil
		_ = json.Unmarshal(b, &got)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"run_id":"r1","thread_id":"t1","status":"pending"}`))
	}))
	defer srv.Close()
	c := newClient(t, srv.URL)
	full := &client.RunCreate{
		Command:  &client.Command{Resume: map[string]any{"i1": "yes"}, Update: map[string]any{"k": 1}, Goto: []any{"a", map[string]any{"node": "b", "input": 2}}},
		Config:   &client.RunConfig{RecursionLimit: 7, Tags: []string{"x"}, Configurable: map[string]any{"user": "u"}},
		Context:  map[string]any{"model": "m"},
		Metadata: map[string]any{"m": 1}, StreamMode: []string{"values", "debug"}, StreamSubgraphs: true, StreamResumable: true,
		InterruptBefore: []string{"*"}, InterruptAfter: []string{"a", "b"},
		Checkpoint:        &client.Checkpoint{CheckpointID: "cp1"},
		MultitaskStrategy: "rollback", OnDisconnect: "cancel", OnCompletion: "keep", IfNotExists: "create",
		After: 1500 * time.Millisecond, Webhook: "https://hooks.example.com/x", Durability: "async",
	}
	if _, err := c.Runs.Create(context.Background(), "t1", "agent", full); err != nil {
		t.Fatal(err)
	}
	want := `{"after_seconds":1.5,"assistant_id":"agent","checkpoint":{"checkpoint_id":"cp1","checkpoint_ns":""},` +
		`"command":{"goto":["a",{"input":2,"node":"b"}],"resume":{"i1":"yes"},"update":{"k":1}},` +
		`"config":{"configurable":{"user":"u"},"recursion_limit":7,"tags":["x"]},"context":{"model":"m"},"durability":"async",` +
		`"if_not_exists":"create","interrupt_after":["a","b"],"interrupt_before":"*","metadata":{"m":1},"multitask_strategy":"rollback",` +
		`"on_completion":"keep","on_disconnect":"cancel","stream_mode":["values","debug"],"stream_resumable":true,"stream_subgraphs":true,` +
		`"webhook":"https://hooks.example.com/x"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("body\n%s\nwant\n%s", b, want)
	}
	if _, err := c.Runs.Create(context.Background(), "t1", "agent", &client.RunCreate{Input: map[string]any{"q": 1}, CheckpointID: "cp2"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(got); string(b) != `{"assistant_id":"agent","checkpoint_id":"cp2","input":{"q":1}}` {
		t.Fatalf("a small body %s", b)
	}
	if _, err := c.Runs.Create(context.Background(), "t1", "agent", &client.RunCreate{Input: map[string]any{}, Command: &client.Command{Resume: 1}}); err == nil {
		t.Fatal("Input and Command together were sent")
	}
}

// TestStatelessRunsUseTheRunsRoutes: an empty thread id calls /runs
// (no server routes for these yet, so a fake checks the requests).
func TestStatelessRunsUseTheRunsRoutes(t *testing.T) {
	t.Parallel()
	c := fakeAPI(t, []fakeCall{
		{method: "POST", path: "/runs/batch", body: `[{"assistant_id":"agent","input":{"q":1}},{"assistant_id":"other","on_completion":"keep"}]`,
			status: 200, answer: `[{"run_id":"r1","status":"pending"},{"run_id":"r2","status":"pending"}]`},
		{method: "POST", path: "/runs/wait", body: `{"assistant_id":"agent","input":{}}`, status: 200, answer: `{"out":1}`,
			header: map[string]string{"Content-Location": "/runs/r3"}},
		{method: "POST", path: "/threads/t1/runs/r1/cancel", query: "action=rollback&wait=1", status: 204},
		{method: "POST", path: "/threads/t1/runs/r1/cancel", query: "action=interrupt&wait=0", status: 202},
	})
	ctx := context.Background()
	got, err := c.Runs.CreateBatch(ctx, []client.BatchRun{{AssistantID: "agent", Options: &client.RunCreate{Input: map[string]any{"q": 1}}},
		{AssistantID: "other", Options: &client.RunCreate{OnCompletion: "keep"}}})
	if err != nil || len(got) != 2 || got[1].RunID != "r2" {
		t.Fatalf("CreateBatch = %+v, %v", got, err)
	}
	res, err := c.Runs.Wait(ctx, "", "agent", &client.RunCreate{Input: map[string]any{}})
	if err != nil || res.RunID != "r3" || res.ThreadID != "" || res.Values["out"] != 1.0 {
		t.Fatalf("stateless Wait = %+v, %v", res, err)
	}
	if err := c.Runs.Cancel(ctx, "t1", "r1", &client.CancelOptions{Wait: true, Action: "rollback"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Runs.Cancel(ctx, "t1", "r1", nil); err != nil {
		t.Fatal(err)
	}
}

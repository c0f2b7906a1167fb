package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/studio"
)

// TestServeWithPostgres is `make run` in miniature: the Studio starts on a
// real database, migrates it, and /healthz names the Postgres backends.
func TestServeWithPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pgtest.Pool(t) // the database is reachable and migrated
	body := serveAndGet(t, studio.Config{DatabaseURL: url, Addr: "127.0.0.1:0"}, "/healthz")
	var got struct {
		Status   string
		Backends handlers.Backends
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("healthz body %q: %v", body, err)
	}
	want := handlers.Backends{Checkpoints: "postgres", Store: "postgres", Cache: "postgres"}
	if got.Status != "ok" || got.Backends != want {
		t.Fatalf("healthz = %+v, want ok with %+v", got, want)
	}
}

func TestServeInMemory(t *testing.T) {
	t.Parallel()
	body := serveAndGet(t, studio.Config{Addr: "127.0.0.1:0"}, "/healthz")
	if !strings.Contains(body, `"checkpoints":"memory"`) {
		t.Fatalf("healthz = %s, want memory backends", body)
	}
}

func TestOpenRejectsUnreachableDatabase(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Port 1 on loopback refuses connections.
	_, err := studio.Open(ctx, studio.Config{DatabaseURL: "postgres://nobody@127.0.0.1:1/x?sslmode=disable&connect_timeout=2"})
	if err == nil || !strings.Contains(err.Error(), "cannot reach the database") {
		t.Fatalf("Open = %v, want a clear unreachable-database error", err)
	}
}

type demoState struct {
	N int `json:"n"`
}

func demoGraph(t *testing.T, saver checkpoints.Saver) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[demoState]()
	sg.AddNode("inc", func(_ context.Context, s demoState) (engine.Output, error) { return engine.Update{"n": s.N + 1}, nil })
	sg.AddEdge(engine.Start, "inc").AddEdge("inc", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestServeShowsRegisteredGraphs(t *testing.T) {
	t.Parallel()
	body := serveAndGet(t, studio.Config{Addr: "127.0.0.1:0", Graphs: map[string]engine.Compiled{"counter": demoGraph(t, checkpoints.NewMemory())}}, "/graphs/counter")
	if !strings.Contains(body, `id="n-inc"`) || !strings.Contains(body, `action="/graphs/counter/runs"`) {
		t.Fatalf("graph page lacks the drawing or the start form: %.500s", body)
	}
}

func TestOpenRejectsAGraphWithoutCheckpointer(t *testing.T) {
	t.Parallel()
	_, err := studio.Open(context.Background(), studio.Config{Graphs: map[string]engine.Compiled{"counter": demoGraph(t, nil)}})
	if err == nil || !strings.Contains(err.Error(), "no checkpointer") {
		t.Fatalf("Open = %v, want a clear missing-checkpointer error", err)
	}
}

func serveAndGet(t *testing.T, cfg studio.Config, path string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- studio.Serve(ctx, cfg, func(a net.Addr) { addrc <- a }) }()
	returned := false
	t.Cleanup(func() {
		cancel()
		if returned {
			return
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		returned = true // the cleanup must not wait for it again
		t.Fatalf("Serve returned early: %v", err)
	}
	resp, err := http.DefaultClient.Do(pageRequest(t, "http://"+addr.String()+path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// TestBuildGetsTheStudiosBackends: graphs registered through Build run on
// the backends the Studio reports, so /healthz never claims Postgres while
// threads live in memory.
func TestBuildGetsTheStudiosBackends(t *testing.T) {
	t.Parallel()
	pgtest.Pool(t)
	for _, tc := range []struct {
		url  string
		want string
	}{{"", "*checkpoints.Memory"}, {pgtest.URL(t), "*pgsaver.Saver"}} {
		var got studio.Backends
		s, err := studio.Open(context.Background(), studio.Config{DatabaseURL: tc.url, Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
			got = b
			return nil, nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if typ := fmt.Sprintf("%T", got.Checkpointer); typ != tc.want || got.Cache == nil || got.Store == nil {
			t.Errorf("url %q: backends %+v (checkpointer %s), want %s with a cache and a store", tc.url, got, typ, tc.want)
		}
		s.Close()
	}
}

// schemaURL is a database URL whose connections use the fresh schema of
// pgtest.Schema, so a test that commits (and a Studio that marks every
// running thread of its database as failed when it opens) touches no one
// else's rows.
func schemaURL(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.Schema(t, nil)
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", pool.Config().ConnConfig.RuntimeParams["search_path"])
	u.RawQuery = q.Encode()
	return u.String(), pool
}

// reviewGraph asks for an approval, then counts it.
func reviewGraph(saver checkpoints.Saver) (engine.Compiled, error) {
	sg := engine.NewStateGraph[demoState]()
	sg.AddNode("review", func(ctx context.Context, s demoState) (engine.Output, error) {
		ok, err := engine.Interrupt(ctx, map[string]any{"question": "publish?"})
		if err != nil {
			return nil, err
		}
		if ok == true {
			return engine.Update{"n": s.N + 1}, nil
		}
		return nil, nil
	})
	sg.AddEdge(engine.Start, "review").AddEdge("review", engine.End)
	return sg.Compile(engine.CompileOptions{Checkpointer: saver})
}

// TestThreadsPageSurvivesARestart is `make run` stopped and started again
// on one database: the second Studio's threads page lists the thread the
// first one left waiting for an approval, its page shows the question,
// and approving it there runs it to the end.
func TestThreadsPageSurvivesARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, pool := schemaURL(t)
	cfg := studio.Config{DatabaseURL: dbURL, Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
		g, err := reviewGraph(b.Checkpointer)
		return map[string]engine.Compiled{"review": g}, err
	}}

	first, err := studio.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Runs().Start(ctx, "review", "left-waiting", nil, runs.StartOptions{}); err != nil {
		first.Close()
		t.Fatal(err)
	}
	if th, err := first.Runs().Wait(ctx, "left-waiting"); err != nil || th.Status != runs.StatusInterrupted {
		first.Close()
		t.Fatalf("first Studio: %+v, %v; want the thread interrupted", th, err)
	}
	first.Close()
	var saved int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM studio_threads WHERE id = $1", "left-waiting").Scan(&saved); err != nil || saved != 1 {
		t.Fatalf("the test's schema has %d rows for the thread (%v): the Studio wrote elsewhere", saved, err)
	}

	second, err := studio.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		second.Handler().ServeHTTP(rec, pageRequest(t, path))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d: %.300s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	for _, path := range []string{"/threads", "/threads?status=interrupted&graph=review"} {
		body := get(path)
		if !strings.Contains(body, `id="thread-left-waiting"`) || !strings.Contains(body, "status-interrupted") {
			t.Fatalf("GET %s does not list the interrupted thread of the first Studio: %.2000s", path, body)
		}
	}
	if body := get("/threads?status=idle"); strings.Contains(body, "left-waiting") {
		t.Fatalf("the idle filter lists the interrupted thread")
	}
	if body := get("/threads/left-waiting"); !strings.Contains(body, `id="approval"`) || !strings.Contains(body, "publish?") {
		t.Fatalf("the thread page of the second Studio has no approval panel with the question: %.2000s", body)
	}

	th, err := second.Runs().Thread(context.Background(), "left-waiting")
	if err != nil || len(th.Pending) != 1 {
		t.Fatalf("second Studio: %+v, %v; want one pending interrupt", th, err)
	}
	form := url.Values{"action": {"approve"}, "interrupt_id": {th.Pending[0].ID}}
	req := httptest.NewRequest(http.MethodPost, "/threads/left-waiting/resume", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	second.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("approve = %d: %.300s", rec.Code, rec.Body)
	}
	if th, err := second.Runs().Wait(ctx, "left-waiting"); err != nil || th.Status != runs.StatusIdle {
		t.Fatalf("after approving: %+v, %v; want idle", th, err)
	}
	if body := get("/threads?status=idle"); !strings.Contains(body, `id="thread-left-waiting"`) {
		t.Fatalf("the finished thread is not listed as idle")
	}
}

// TestThreadsPageShowsTheNewestAndSaysSo: with more threads in the
// registry than the page shows, it shows the newest and says the list is
// cut; a filter reaches an old thread.
func TestThreadsPageShowsTheNewestAndSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, pool := schemaURL(t)
	reg := pgthreads.New(pool)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const total = 502
	for i := range total {
		status := runs.StatusIdle
		if i == 0 {
			status = runs.StatusError // the oldest, and the only failed one
		}
		rec := runs.ThreadRecord{ID: fmt.Sprintf("t%04d", i), Graph: "review", Status: status, Updated: start.Add(time.Duration(i) * time.Minute)}
		if err := reg.SaveThread(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	s, err := studio.Open(ctx, studio.Config{DatabaseURL: dbURL, Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
		g, err := reviewGraph(b.Checkpointer)
		return map[string]engine.Compiled{"review": g}, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, pageRequest(t, path))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s = %d: %.300s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	body := get("/threads")
	rows := strings.Count(body, `<tr id="thread-`)
	if rows != 500 || !strings.Contains(body, `id="threads-capped"`) {
		t.Fatalf("GET /threads shows %d rows (capped note: %v), want the newest 500 and a note", rows, strings.Contains(body, `id="threads-capped"`))
	}
	if !strings.Contains(body, fmt.Sprintf(`id="thread-t%04d"`, total-1)) || strings.Contains(body, `id="thread-t0001"`) {
		t.Fatal("GET /threads does not show the newest threads")
	}
	body = get("/threads?status=error")
	if !strings.Contains(body, `id="thread-t0000"`) || strings.Contains(body, `id="threads-capped"`) {
		t.Fatalf("the error filter does not find the oldest thread, or says it is cut: %.1000s", body)
	}
}

// An example input must belong to a graph the Studio serves: a typo in a
// name would otherwise leave that graph's form with its zero state.
func TestOpenRefusesAnInputForAnUnknownGraph(t *testing.T) {
	t.Parallel()
	_, err := studio.Open(context.Background(), studio.Config{Inputs: map[string]map[string]any{"no-such-graph": {"x": 1.0}}})
	if err == nil || !strings.Contains(err.Error(), `"no-such-graph"`) {
		t.Fatalf("Open = %v, want an error naming the graph", err)
	}
}

package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/pgtest"
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
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	var addr net.Addr
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("Serve returned early: %v", err)
	}
	resp, err := http.Get("http://" + addr.String() + path)
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

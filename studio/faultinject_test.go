package studio_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/studio"
)

type faultState struct {
	Log []string `json:"log" reduce:"append"`
}

// faultRuns is how many runs are in flight when the database goes down.
const faultRuns = 40

// faultDowntime is how long the database stays down.
const faultDowntime = 5 * time.Second

// Forty runs are in flight when the Studio's Postgres is stopped for five
// seconds and started again (a cluster of the test's own, made by
// scripts/dev-postgres). Every run ends well (the saver and the registry
// retry transient faults), every registry row matches its thread's
// checkpoints, and no page asked for during the outage answers 5xx.
func TestFaultInjectionPostgresRestart(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	ctx := context.Background()
	entered := make(chan struct{}, faultRuns)
	release := make(chan struct{})
	build := func(b studio.Backends) (map[string]engine.Compiled, error) {
		g := engine.NewStateGraph[faultState]()
		step := func(name string) func(context.Context, faultState) (engine.Output, error) {
			return func(ctx context.Context, _ faultState) (engine.Output, error) {
				if name == "first" {
					// Every run is held here until the database is down,
					// so all forty are in flight across the outage.
					entered <- struct{}{}
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return engine.Update{"log": []string{name}}, nil
			}
		}
		names := []string{"first", "second", "third", "fourth"}
		prev := engine.Start
		for _, n := range names {
			g.AddNode(n, step(n))
			g.AddEdge(prev, n)
			prev = n
		}
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: b.Checkpointer})
		return map[string]engine.Compiled{"steps": cg}, err
	}
	s, err := studio.Open(ctx, studio.Config{DatabaseURL: cluster.URL, Build: build})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, form url.Values) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get("Location")
	}
	for i := range faultRuns {
		if code, loc := post("/graphs/steps/runs", url.Values{"thread": {fmt.Sprintf("f-%d", i)}, "input": {`{"log": ["in"]}`}}); code != http.StatusSeeOther {
			t.Fatalf("start %d: %d %s", i, code, loc)
		}
	}
	for range faultRuns {
		<-entered
	}

	cluster.Stop(t)
	// Pages asked for while the database is down wait for it (the reads
	// retry) and must not fail with a 5xx.
	var mu sync.Mutex
	codes := map[string]int{}
	var pages sync.WaitGroup
	for _, path := range []string{"/threads", "/threads/f-1", "/threads/f-2/checkpoints", "/healthz"} {
		pages.Add(1)
		go func() {
			defer pages.Done()
			res, err := http.DefaultClient.Do(pageRequest(t, srv.URL+path))
			code := 0
			if err == nil {
				code = res.StatusCode
				res.Body.Close()
			}
			mu.Lock()
			codes[path] = code
			mu.Unlock()
		}()
	}
	close(release)            // the runs go on into the outage
	time.Sleep(faultDowntime) // the outage itself, not a synchronisation
	cluster.Start(t)
	pages.Wait()

	for path, code := range codes {
		// /healthz says 503 while the database is down: that is its job.
		if code == 0 || (code >= 500 && path != "/healthz") {
			t.Errorf("GET %s during the outage: %d", path, code)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	registry := pgthreads.New(pool)
	g, err := s.Runs().Graph("steps")
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for i := range faultRuns {
		id := fmt.Sprintf("f-%d", i)
		th, err := s.Runs().Wait(wctx, id)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if th.Status != runs.StatusIdle {
			failed++
			if th.Error == "" {
				t.Errorf("%s ended %s with no error to say why", id, th.Status)
			}
			t.Logf("%s: %s: %s", id, th.Status, th.Error)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d runs did not survive a %v database restart", failed, faultRuns, faultDowntime)
	}
	// The registry's writes land after the restart too: each row matches
	// its thread's checkpoints (an idle thread has nothing left to run).
	for i := range faultRuns {
		id := fmt.Sprintf("f-%d", i)
		var rec runs.ThreadRecord
		for {
			rec, err = registry.GetThread(wctx, id)
			if err != nil {
				t.Fatalf("%s: registry: %v", id, err)
			}
			if rec.Status != runs.StatusRunning || wctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond) // the writer retries in the background
		}
		st, err := g.Pregel().GetState(wctx, checkpoints.Config{ThreadID: id})
		if err != nil {
			t.Fatalf("%s: state: %v", id, err)
		}
		finished := len(st.Next) == 0 && !st.WritesPending
		if (rec.Status == runs.StatusIdle) != finished || (finished && fmt.Sprint(st.Values["log"]) != "[in first second third fourth]") {
			t.Errorf("%s: registry says %s, checkpoints say next %v, writes pending %v, log %v", id, rec.Status, st.Next, st.WritesPending, st.Values["log"])
		}
	}
}

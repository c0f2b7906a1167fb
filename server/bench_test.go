package server_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/server"
)

// threeNodes is a → b → c over a memory or Postgres saver.
func threeNodes(b *testing.B, saver checkpoints.Saver) engine.Compiled {
	b.Helper()
	sg := engine.NewStateGraph[steps]()
	for _, n := range []string{"a", "b", "c"} {
		sg.AddNode(n, func(context.Context, steps) (engine.Output, error) { return engine.Update{"log": n}, nil })
	}
	sg.AddSequence("a", "b", "c").AddEdge(engine.Start, "a").AddEdge("c", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// pgServer is the API over Postgres as the Studio wires it: checkpoints,
// thread registry, run log and assistants in one fresh schema (pgtest
// logs whether the database is durable).
func pgServer(b *testing.B) string {
	url, _ := pgServerFloor(b)
	return url
}

// pgServerFloor is pgServer that also measures the floor in the same
// run: the median of 50 single-row insert-and-commits on the same pool
// (one fsync each on a durable cluster).
func pgServerFloor(b *testing.B) (string, time.Duration) {
	b.Helper()
	pool := pgtest.Schema(b, nil)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, "CREATE TABLE bench_floor (id bigserial PRIMARY KEY, v text)"); err != nil {
		b.Fatal(err)
	}
	var commits []time.Duration
	for range 50 {
		start := time.Now()
		if _, err := pool.Exec(ctx, "INSERT INTO bench_floor (v) VALUES ('x')"); err != nil {
			b.Fatal(err)
		}
		commits = append(commits, time.Since(start))
	}
	saver := pgsaver.New(pool, nil)
	m, err := runs.NewManager(map[string]engine.Compiled{"three": threeNodes(b, saver)},
		runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)))
	if err != nil {
		b.Fatal(err)
	}
	api, err := server.New(server.Config{Runs: m, Assistants: pgthreads.NewAssistants(pool)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(func() {
		srv.Close()
		api.Close()
		m.Close()
	})
	return srv.URL, percentile(commits, 0.5)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkRunsWaitPostgres is the round trip of runs.wait for a 3-node
// graph on a new thread, over HTTP, on Postgres: the run is created, its
// four checkpoints saved (durability sync), and the final values sent.
// It reports p50 and p99 besides the mean.
func BenchmarkRunsWaitPostgres(b *testing.B) {
	base, floor := pgServerFloor(b)
	body := `{"assistant_id":"three","input":{"log":["go"]},"if_not_exists":"create"}`
	client := &http.Client{}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := client.Post(base+"/threads/"+uuid.NewString()+"/runs/wait", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(out), `"log":["go","a","b","c"]`) {
			b.Fatalf("wait = %d %s", res.StatusCode, out)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(lat, 0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(floor.Microseconds())/1000, "floor-commit-ms")
}

// BenchmarkStream200Clients has 200 clients stream a run each, all at
// once, on one server over Postgres: every client must receive every
// event of its run (metadata, the input's values, then an update and the
// values after each of the 3 nodes: 8 events), and the benchmark reports
// the p99 of the time to the first event and the events lost (0).
func BenchmarkStream200Clients(b *testing.B) {
	base := pgServer(b)
	const clients = 200
	const want = 8
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: transport}
	var first []time.Duration
	lost := 0
	b.ResetTimer()
	for range b.N {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				body := `{"assistant_id":"three","input":{"log":["go"]},"if_not_exists":"create","stream_mode":["values","updates"]}`
				start := time.Now()
				res, err := client.Post(base+"/threads/"+uuid.NewString()+"/runs/stream", "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				defer res.Body.Close()
				sc := bufio.NewScanner(res.Body)
				n := 0
				var firstAt time.Duration
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "event: ") {
						if n == 0 {
							firstAt = time.Since(start)
						}
						n++
					}
				}
				mu.Lock()
				defer mu.Unlock()
				first = append(first, firstAt)
				lost += max(0, want-n)
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(first, 0.99).Microseconds())/1000, "first-event-p99-ms")
	b.ReportMetric(float64(lost), "events-lost")
	if lost > 0 {
		b.Errorf("%d events lost", lost)
	}
}

package server_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/internal/testclock"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
	"github.com/superstep-dev/superstep/server"
)

// cronReplica is a Studio process on the shared database whose crons
// fire from river: its queue runs the crons' tick and fire jobs.
type cronReplica struct {
	*client
	api  *server.API
	jobs *server.CronJobs
}

func newCronReplica(t *testing.T, pool *pgxpool.Pool, id string, clock *testclock.Clock) *cronReplica {
	t.Helper()
	jobs, err := server.NewCronJobs(pool)
	if err != nil {
		t.Fatal(err)
	}
	// The queue starts before the API exists, as in the Studio: fire
	// jobs wait for it.
	d := durableReplicaWith(t, pool, id, nil, func(c *riverq.Config) {
		c.AddWorkers, c.PeriodicJobs, c.Queues = jobs.AddWorkers, jobs.PeriodicJobs(), jobs.Queues()
	}, func(c *server.Config) { c.Crons, c.CronJobs = pgthreads.NewCrons(pool), jobs })
	server.SetCronClock(d.api, clock.Now)
	return &cronReplica{client: d.client, api: d.api, jobs: jobs}
}

// TestCronFiresOnceAcrossReplicas: two replicas on one database, each
// with river's periodic tick and, on top, ticks called by the test on
// both at once: each due time of a thread's cron starts exactly one run,
// listed on the thread; a fire job retried on the other replica starts
// nothing; deleting the thread on one replica deletes its crons.
func TestCronFiresOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	clock := testclock.New(cronT0)
	a, b := newCronReplica(t, pool, "a", clock), newCronReplica(t, pool, "b", clock)
	thread := a.newThread()
	cr := b.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
		"input": map[string]any{"log": []string{"t"}}, "end_time": "2030-01-01T00:03:30Z"}, 200)
	want := []string{}
	wantLog := ""
	for i := 1; i <= 3; i++ {
		clock.Set(minute(i))
		var wg sync.WaitGroup
		for _, r := range []*cronReplica{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.jobs.Tick(context.Background(), clock.Now()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		want = append(want, minute(i).Format(time.RFC3339))
		wantLog += " t a b c"
		waitValues(t, a.client, thread, "["+wantLog[1:]+"]")
	}
	// Every fire job has ended: nothing more can start.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var open, done int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE state <> 'completed'), count(*) FILTER (WHERE state = 'completed')
			FROM river_job WHERE kind = 'superstep.cron_fire'`).Scan(&open, &done); err != nil {
			t.Fatal(err)
		}
		if open == 0 && done == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fire jobs: %d not completed, %d completed; want 0 and 3", open, done)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := b.cronRuns(thread); !slices.Equal(got, want) {
		t.Fatalf("runs fired for %v, want one for each of %v", got, want)
	}
	// The first fire job, retried on the other replica (its process died
	// before river marked it done).
	st := pgthreads.NewCrons(pool)
	c, err := st.GetCron(context.Background(), cr["cron_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if c.NextRun != nil {
		t.Errorf("next run past the end time: %v", c.NextRun)
	}
	if err := server.FireCron(context.Background(), b.api, runs.CronFiring{Cron: c, At: minute(1)}); err != nil {
		t.Fatal(err)
	}
	if got := a.cronRuns(thread); len(got) != 3 {
		t.Fatalf("a retried firing started a run: %v", got)
	}
	if code, _, body := a.do("DELETE", "/threads/"+thread, nil); code != 204 {
		t.Fatalf("delete thread = %d %s", code, body)
	}
	if _, _, body := b.do("POST", "/runs/crons/count", nil); string(body) != "0" {
		t.Errorf("crons after their thread was deleted on the other replica: %s, want 0", body)
	}
}

// TestCronFiresFromRiversPeriodicJob: with nobody calling Tick, the
// leader's periodic job finds each due time of a stateless cron and its
// run goes on a thread of its own, kept as asked; the finished ticks do
// not pile up in river_job.
func TestCronFiresFromRiversPeriodicJob(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	clock := testclock.New(cronT0)
	a, b := newCronReplica(t, pool, "a", clock), newCronReplica(t, pool, "b", clock)
	cr := a.json("POST", "/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
		"input": map[string]any{"log": []string{"s"}}, "on_run_completed": "keep"}, 200)
	// Three due times, each found by a tick of its own.
	for i := 1; i <= 3; i++ {
		clock.Set(minute(i))
		thread := runs.CronFiring{Cron: runs.Cron{ID: cr["cron_id"].(string)}, At: minute(i)}.Key()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if code, _, _ := b.do("GET", "/threads/"+thread, nil); code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the periodic job never fired the cron for 00:0%d", i)
			}
			time.Sleep(50 * time.Millisecond)
		}
		waitValues(t, b.client, thread, "[s a b c]")
		if rs := a.list("GET", "/threads/"+thread+"/runs", nil, 200); len(rs) != 1 {
			t.Errorf("the firing's thread has %d runs, want 1", len(rs))
		} else if md := rs[0]["metadata"].(map[string]any); md["cron_id"] != cr["cron_id"] {
			t.Errorf("run metadata %v", md)
		}
	}
	if got := fmt.Sprint(a.list("POST", "/runs/crons/search", nil, 200)[0]["next_run_date"]); got != "2030-01-01T00:04:00Z" {
		t.Errorf("next run %s, want 00:04", got)
	}
	// At least three ticks ended; each clears the ones before it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ticks int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'superstep.cron_tick' AND state = 'completed'`).Scan(&ticks); err != nil {
			t.Fatal(err)
		}
		if ticks <= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d finished ticks kept in river_job", ticks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

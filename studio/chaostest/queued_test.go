package chaostest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/internal/pgtest"
)

// queuedThreads is how many threads TestChaosQueuedRunsSurviveKills
// gives three runs each.
const queuedThreads = 30

// TestChaosQueuedRunsSurviveKills: three replicas; each of 30 threads
// gets a run, then a run enqueued behind it and one delayed by a second,
// sent to other replicas, while a random replica is killed (and
// restarted) every 2 s. Every run of every thread succeeds, each once
// (its steps' effects at most twice, by a takeover), in the order they
// were made: no run of a thread starts before the one ahead of it ended;
// and nothing is left queued.
func TestChaosQueuedRunsSurviveKills(t *testing.T) {
	base := pgtest.URL(t)
	pool := pgtest.Schema(t, nil)
	createEffects(t, pool)
	f := newFleet(t, schemaURL(t, base, pool), 3, killTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const window = 6 * time.Second
	submitted := make(chan struct{})
	faults := killReplicas(ctx, t, f, submitted, window)

	var mu sync.Mutex
	order := map[string][]string{} // thread -> its runs, in the order made
	var errs []error
	var wg sync.WaitGroup
	for k := range queuedThreads {
		thread := uuid.NewString()
		wg.Go(func() {
			first, _, err := submit(ctx, f, k, thread)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			ids := []string{first}
			for j, extra := range []map[string]any{{}, {"after_seconds": 1}} {
				body := map[string]any{"assistant_id": "chaos", "input": map[string]any{"n": 0}, "multitask_strategy": "enqueue"}
				for key, v := range extra {
					body[key] = v
				}
				id, err := submitQueued(ctx, f, k+j+1, thread, body, len(ids)+1)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				ids = append(ids, id)
			}
			mu.Lock()
			order[thread] = ids
			mu.Unlock()
		})
		pause(ctx, window/queuedThreads)
	}
	wg.Wait()
	close(submitted)
	faults()
	for _, err := range errs {
		t.Error(err)
	}

	// Every run ends, successfully.
	all := map[string]string{} // "thread/i" -> run id, for waitRuns
	for thread, ids := range order {
		for i, id := range ids {
			all[fmt.Sprintf("%s/runs/%d", thread, i)] = id
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, waitFor)
	status := map[string]string{}
	for ; ; pause(wctx, 200*time.Millisecond) {
		pending := 0
		for key, id := range all {
			if terminal(status[key]) {
				continue
			}
			thread := key[:36]
			var r runObj
			if _, err := call(http.MethodGet, f.live(len(status)), "/threads/"+thread+"/runs/"+id, nil, &r); err == nil {
				status[key] = r.Status
			}
			if !terminal(status[key]) {
				pending++
			}
		}
		if pending == 0 || wctx.Err() != nil {
			break
		}
	}
	wcancel()
	for key, id := range all {
		if status[key] != "success" {
			t.Errorf("%s (run %s) ended %q, want success; %s", key, id, status[key], f.history(ctx, pool, key[:36]))
		}
	}

	// Each run made every step's effect, repeated only under a new fence
	// (see checkThreads).
	var partial, twice int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT run_id FROM chaos_effects GROUP BY run_id HAVING count(DISTINCT step) <> $1) p),
			(SELECT count(*) FROM (SELECT 1 FROM chaos_effects GROUP BY run_id, step, fence HAVING count(*) > 1) o)`, steps).Scan(&partial, &twice); err != nil {
		t.Fatal(err)
	}
	if partial > 0 || twice > 0 {
		t.Errorf("%d runs did not make each step's effect, %d steps made theirs twice under one fence", partial, twice)
	}
	// A thread's runs ran one after the other, in the order made: each
	// run's first effect comes after the last of the run before it.
	for thread, ids := range order {
		var prevEnd time.Time
		for i, id := range ids {
			var first, last *time.Time
			if err := pool.QueryRow(ctx, `SELECT min(at), max(at) FROM chaos_effects WHERE run_id = $1`, id).Scan(&first, &last); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				t.Errorf("thread %s: run %d (%s) made no effect", thread, i, id)
				break
			}
			if i > 0 && first.Before(prevEnd) {
				t.Errorf("thread %s: run %d (%s) began at %s, before run %d ended at %s", thread, i, id,
					first.Format(time.RFC3339Nano), i-1, prevEnd.Format(time.RFC3339Nano))
			}
			prevEnd = *last
		}
	}
	checkEventLog(t, ctx, pool)
	var queued, active int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM studio_run_queue), (SELECT count(*) FROM studio_thread_leases WHERE run_id IS NOT NULL)`).Scan(&queued, &active); err != nil {
		t.Fatal(err)
	}
	if queued > 0 || active > 0 {
		t.Errorf("after every run ended, %d runs are still queued and %d leases active", queued, active)
	}
	// A run whose effects carry several fences was taken over.
	var takeovers int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(f - 1), 0) FROM (SELECT count(DISTINCT fence) AS f FROM chaos_effects GROUP BY run_id) x`).Scan(&takeovers); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	kills := f.kills
	f.mu.Unlock()
	t.Logf("%d threads of 3 runs, %d kills, %d takeovers", len(order), kills, takeovers)
	if kills == 0 {
		t.Error("the chaos killed no replica")
	}
}

// submitQueued makes one more run on thread (the want-th), through slot
// first's replica and, when a replica dies under the POST, the next live
// one, after looking whether the lost POST made the run: the thread then
// lists want runs.
func submitQueued(ctx context.Context, f *fleet, first int, thread string, body map[string]any, want int) (string, error) {
	var last error
	for attempt := 0; ctx.Err() == nil; attempt++ {
		base := f.live(first + attempt)
		if base == "" {
			pause(ctx, 100*time.Millisecond)
			continue
		}
		if attempt > 0 {
			var list []runObj
			if _, err := call(http.MethodGet, base, "/threads/"+thread+"/runs?limit=100", nil, &list); err != nil {
				last = err
				pause(ctx, 100*time.Millisecond)
				continue
			}
			if len(list) >= want {
				return list[0].RunID, nil // newest first
			}
		}
		var run runObj
		code, err := call(http.MethodPost, base, "/threads/"+thread+"/runs", body, &run)
		f.note(thread, "queue on %s: %d %s %v", base, code, run.RunID, err)
		if err == nil {
			return run.RunID, nil
		}
		if code >= 400 && code < 500 {
			return "", err
		}
		last = err
	}
	return "", fmt.Errorf("thread %s: run %d not made before the deadline: %v", thread, want, last)
}

package chaostest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// httpc bounds every read: a replica paused mid-request must not hang
// the test. A POST gets longer: one given up while its replica still
// works on it may start its run after the retry started another (the
// API has no idempotency key to tell them apart), and a replica killed
// under it fails it at once anyway.
var (
	httpc = &http.Client{Timeout: 5 * time.Second}
	postc = &http.Client{Timeout: 30 * time.Second}
)

// call does one API request; out, when set, receives the JSON answer of
// a 2xx. A transport error (the replica died) is returned as such.
func call(method, base, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c := httpc
	if method == http.MethodPost {
		c = postc
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: read the answer %q: %w", method, path, b, err)
		}
	}
	return res.StatusCode, nil
}

// runObj is the part of the API's Run object the tests read.
type runObj struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

// submit starts the thread's one run in the background through slot
// first's replica, and returns its id and how many replicas it tried. A POST whose replica died is
// retried on the next live replica, after looking for the run it may have
// created: each thread gets exactly one run. reject makes a retry on a
// thread whose first POST did claim a run a 409, not a second run queued
// behind it.
func submit(ctx context.Context, f *fleet, first int, thread string) (string, int, error) {
	body := map[string]any{"assistant_id": "chaos", "input": map[string]any{"n": 0}, "if_not_exists": "create", "multitask_strategy": "reject"}
	var last error
	attempt := 0
	for ; ctx.Err() == nil; attempt++ {
		base := f.live(first + attempt)
		if base == "" {
			last = errors.New("no replica is up")
			pause(ctx, 100*time.Millisecond)
			continue
		}
		if attempt > 0 {
			// The earlier POST may have created the run before its
			// replica died.
			var list []runObj
			code, err := call(http.MethodGet, base, "/threads/"+thread+"/runs", nil, &list)
			f.note(thread, "list on %s: %d %v %v", base, code, list, err)
			switch {
			case err == nil && len(list) > 0:
				return list[0].RunID, attempt + 1, nil
			case err != nil && code != http.StatusNotFound:
				last = err
				pause(ctx, 100*time.Millisecond)
				continue
			}
		}
		var run runObj
		began := time.Now()
		code, err := call(http.MethodPost, base, "/threads/"+thread+"/runs", body, &run)
		if err == nil {
			f.mu.Lock()
			f.postTimes = append(f.postTimes, time.Since(began))
			f.mu.Unlock()
		}
		f.note(thread, "POST on %s: %d %s %v", base, code, run.RunID, err)
		switch {
		case err == nil:
			return run.RunID, attempt + 1, nil
		case code == http.StatusConflict:
			// A run claimed by a POST whose answer was lost: it shows
			// in the list once its record is written.
			last = err
			pause(ctx, 100*time.Millisecond)
		case code >= 400 && code < 500:
			return "", attempt + 1, err
		default:
			last = err
		}
	}
	return "", attempt, fmt.Errorf("thread %s: no run started before the deadline: %v", thread, last)
}

// pause waits d or until ctx ends: the pacing of retries and polls.
func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// terminal reports whether a run's status is final.
func terminal(status string) bool {
	return slices.Contains([]string{"success", "error", "interrupted", "timeout"}, status)
}

// waitRuns polls every run (thread -> run id) on any live replica until
// all are terminal or ctx ends, and returns their statuses.
func waitRuns(ctx context.Context, f *fleet, runs map[string]string) map[string]string {
	status := map[string]string{}
	for i := 0; ; i++ {
		pending := 0
		for thread, id := range runs {
			if terminal(status[thread]) {
				continue
			}
			base := f.live(i)
			var r runObj
			if _, err := call(http.MethodGet, base, "/threads/"+thread+"/runs/"+id, nil, &r); err == nil {
				status[thread] = r.Status
			}
			if !terminal(status[thread]) {
				pending++
			}
		}
		if pending == 0 || ctx.Err() != nil {
			return status
		}
		pause(ctx, 200*time.Millisecond)
	}
}

// waitFor bounds how long the tests wait for their runs to end.
const waitFor = 60 * time.Second

// checkThreads waits at most wait for the runs to end, then asserts what
// every chaos test asserts:
// each run succeeded and its thread counted to steps; the thread's
// checkpoints form one chain; no step's effect was made twice by one
// holder;
// no effect was made by a holder whose lease had moved on; no lease is
// left active. It returns how many takeovers the effects show.
func checkThreads(t *testing.T, ctx context.Context, f *fleet, pool *pgxpool.Pool, runs map[string]string, wait time.Duration) (takeovers int) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, wait)
	status := waitRuns(wctx, f, runs)
	cancel()
	for thread, id := range runs {
		if status[thread] != "success" {
			t.Errorf("thread %s: run %s ended %q, want success; %s", thread, id, status[thread], f.history(ctx, pool, thread))
			continue
		}
		var st struct {
			Values map[string]any `json:"values"`
		}
		if _, err := call(http.MethodGet, f.live(0), "/threads/"+thread+"/state", nil, &st); err != nil {
			t.Errorf("thread %s: state: %v", thread, err)
		} else if n, _ := st.Values["n"].(float64); n != steps {
			t.Errorf("thread %s: state n = %v, want %d", thread, st.Values["n"], steps)
		}
	}

	// Checkpoints: every parent exists, and no two share one (a fork is
	// a second writer continuing from the same checkpoint).
	rows, err := pool.Query(ctx, `SELECT c.thread_id, c.checkpoint_id, c.parent_checkpoint_id,
			(c.parent_checkpoint_id IS NOT NULL AND p.checkpoint_id IS NULL) AS orphan
		FROM checkpoints c LEFT JOIN checkpoints p
			ON p.thread_id = c.thread_id AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.parent_checkpoint_id
		WHERE c.checkpoint_ns = ''`)
	if err != nil {
		t.Fatalf("read the checkpoints: %v", err)
	}
	children := map[[2]string][]string{} // (thread, parent) -> checkpoints
	perThread := map[string]int{}
	for rows.Next() {
		var thread, id string
		var parent *string
		var orphan bool
		if err := rows.Scan(&thread, &id, &parent, &orphan); err != nil {
			t.Fatal(err)
		}
		if orphan {
			t.Errorf("thread %s: checkpoint %s has parent %s, which does not exist", thread, id, *parent)
		}
		p := ""
		if parent != nil {
			p = *parent
		}
		children[[2]string{thread, p}] = append(children[[2]string{thread, p}], id)
		perThread[thread]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for k, ids := range children {
		if len(ids) > 1 {
			t.Errorf("thread %s forks: checkpoints %v all follow %q", k[0], ids, k[1])
		}
	}
	for thread, id := range runs {
		// The input checkpoint, the start's, then one per step.
		if perThread[thread] != steps+2 {
			t.Errorf("thread %s has %d checkpoints, want %d (one run, %s); %s", thread, perThread[thread], steps+2, id, f.history(ctx, pool, thread))
		}
	}

	// Effects: at-least-once, repeated only by takeovers: never by one
	// holder twice, a step runs again only under the new fence of a
	// takeover. A step is usually made at most twice (the takeover that
	// cut it finishes it), but not always: under load a takeover can be
	// cut by the next kill, or a live holder whose renewals came late can
	// lose its lease; the fences keep those safe, and the log counts them.
	var thrice int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM chaos_effects GROUP BY run_id, step HAVING count(*) > 2) d`).Scan(&thrice); err != nil {
		t.Fatal(err)
	}
	if thrice > 0 {
		t.Logf("%d steps made their effect more than twice (each under its own fence)", thrice)
	}
	var twice int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM chaos_effects GROUP BY run_id, step, fence HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice > 0 {
		t.Errorf("%d steps made their effect twice under one fence: a holder ran a step again without a takeover", twice)
	}
	var missing int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT run_id FROM chaos_effects GROUP BY run_id HAVING count(DISTINCT step) <> $1) m`, steps).Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if missing > 0 {
		t.Errorf("%d runs did not make the effect of each of their %d steps", missing, steps)
	}

	// Two holders never interleave: by time, a thread's effects carry a
	// fence that only grows.
	back, err := pool.Query(ctx, `SELECT thread_id, fence, at, prev_fence, prev_at FROM (
			SELECT thread_id, fence, at, lag(fence) OVER w AS prev_fence, lag(at) OVER w AS prev_at
			FROM chaos_effects WINDOW w AS (PARTITION BY thread_id ORDER BY at, fence)) e
		WHERE fence < prev_fence`)
	if err != nil {
		t.Fatal(err)
	}
	for back.Next() {
		var thread string
		var fence, prev int64
		var at, prevAt time.Time
		if err := back.Scan(&thread, &fence, &at, &prev, &prevAt); err != nil {
			t.Fatal(err)
		}
		t.Errorf("thread %s: an effect with fence %d at %s came after one with fence %d at %s: a stale holder wrote after the takeover",
			thread, fence, at.Format(time.RFC3339Nano), prev, prevAt.Format(time.RFC3339Nano))
	}
	if err := back.Err(); err != nil {
		t.Fatal(err)
	}

	checkEventLog(t, ctx, pool)

	var active int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM studio_thread_leases WHERE run_id IS NOT NULL`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active > 0 {
		t.Errorf("%d leases still name an active run after every run ended", active)
	}
	// A claim makes fence 1; a takeover raises it twice (the reap, the
	// new holder's claim).
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT (thread_id, fence)) FROM chaos_effects WHERE fence > 1`).Scan(&takeovers); err != nil {
		t.Fatal(err)
	}
	return takeovers
}

// createEffects makes the table the chaos graph records its steps in.
func createEffects(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE chaos_effects (
		run_id text NOT NULL, thread_id text NOT NULL, step int NOT NULL, fence bigint NOT NULL,
		at timestamptz NOT NULL DEFAULT clock_timestamp())`)
	if err != nil {
		t.Fatalf("create chaos_effects: %v", err)
	}
}

// history tells what the test did with a thread and which runs wrote its
// checkpoints and effects, for a failure's message.
func (f *fleet) history(ctx context.Context, pool *pgxpool.Pool, thread string) string {
	var cps, fx string
	_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(r || ' x' || n, ', '), '') FROM (
		SELECT metadata->>'run_id' AS r, count(*) AS n FROM checkpoints WHERE thread_id = $1 GROUP BY 1) c`, thread).Scan(&cps)
	_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(r || ' x' || n || ' fences ' || fs, ', '), '') FROM (
		SELECT run_id AS r, count(*) AS n, string_agg(DISTINCT fence::text, '/') AS fs FROM chaos_effects WHERE thread_id = $1 GROUP BY 1) e`, thread).Scan(&fx)
	var lease, queue, jobs string
	_ = pool.QueryRow(ctx, `SELECT coalesce((SELECT format('fence %s run %s job %s holder %L expires %s (now %s)', fence, run_id, job_id, holder, expires_at, now())
		FROM studio_thread_leases WHERE thread_id = $1), 'none')`, thread).Scan(&lease)
	_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s %s cancel %L attempts %s', run_id, state, cancel, attempts), ', '), 'none')
		FROM studio_run_queue WHERE thread_id = $1`, thread).Scan(&queue)
	_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(format('job %s %s attempt %s/%s scheduled %s attempted_by %s errors %s', id, state, attempt, max_attempts, scheduled_at, attempted_by, errors), ', ' ORDER BY id), 'none')
		FROM river_job WHERE args->>'thread' = $1`, thread).Scan(&jobs)
	f.mu.Lock()
	notes := strings.Join(f.notes[thread], "; ")
	f.mu.Unlock()
	return fmt.Sprintf("checkpoints by run: %s; effects by run: %s; lease: %s; queue: %s; river jobs: %s; requests: %s", cps, fx, lease, queue, jobs, notes)
}

// checkEventLog asserts, from the threads' event logs, that no thread
// ever had two runs executing at once: each run's events (its start, its
// takeovers, its end) make one stretch of its thread's log, which no
// other run's events interrupt, and each run that started finished.
func checkEventLog(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(ctx, `WITH r AS (
			SELECT thread_id, run_id, min(seq) AS lo, max(seq) AS hi FROM studio_events GROUP BY thread_id, run_id)
		SELECT a.thread_id, a.run_id, a.lo, a.hi, b.run_id, b.lo, b.hi FROM r a JOIN r b
			ON a.thread_id = b.thread_id AND a.run_id < b.run_id AND a.lo < b.hi AND b.lo < a.hi`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var thread, x, y string
		var xlo, xhi, ylo, yhi int64
		if err := rows.Scan(&thread, &x, &xlo, &xhi, &y, &ylo, &yhi); err != nil {
			t.Fatal(err)
		}
		t.Errorf("thread %s: runs %s (events %d..%d) and %s (events %d..%d) executed at once", thread, x, xlo, xhi, y, ylo, yhi)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var started, unfinished int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT (thread_id, run_id)),
			count(DISTINCT (thread_id, run_id)) FILTER (WHERE NOT EXISTS (SELECT 1 FROM studio_events f
				WHERE f.thread_id = e.thread_id AND f.run_id = e.run_id AND f.body->>'kind' = 'run_finished'))
		FROM studio_events e WHERE body->>'kind' = 'run_started'`).Scan(&started, &unfinished); err != nil {
		t.Fatal(err)
	}
	if started == 0 || unfinished > 0 {
		t.Errorf("the event logs tell of %d runs started, %d of them never finished", started, unfinished)
	}
}

package chaostest

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/migrations"
)

// chaosRuns is how many runs TestChaosKillReplicas submits, one per
// thread, over about submitFor.
const (
	chaosRuns = 200
	submitFor = 10 * time.Second
)

// Three replicas share one schema; 200 runs arrive round-robin over ten
// seconds while a random replica is SIGKILLed every two seconds and
// restarted 300 ms later. Every run still succeeds exactly once, with
// one chain of checkpoints, each step's effect made at most twice and
// never by a replica after its lease moved on.
func TestChaosKillReplicas(t *testing.T) {
	base := pgtest.URL(t)
	pool := pgtest.Schema(t, nil)
	createEffects(t, pool)
	f := newFleet(t, schemaURL(t, base, pool), 3, killTTL)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	submitted := make(chan struct{})
	faults := killReplicas(ctx, t, f, submitted, submitFor)

	var mu sync.Mutex
	runs := map[string]string{}
	var errs []error
	retried := 0 // submissions POSTed again after a replica died under one
	var wg sync.WaitGroup
	every := submitFor / chaosRuns
	for k := range chaosRuns {
		thread := uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, tries, err := submit(ctx, f, k%3, thread)
			mu.Lock()
			defer mu.Unlock()
			if tries > 1 {
				retried++
			}
			if err != nil {
				errs = append(errs, err)
				return
			}
			runs[thread] = id
		}()
		pause(ctx, every) // the arrival rate
	}
	wg.Wait()
	close(submitted)
	slowest := faults()
	for _, err := range errs {
		t.Error(err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), waitFor+30*time.Second)
	defer ccancel()
	// A run whose takeover job died with the replica that fetched it
	// (its lease waiting for a worker) is given a new job a lease's
	// length later (see TestChaosTakeoverJobLostWithItsWorker).
	takeovers := checkThreads(t, cctx, f, pool, runs, waitFor)
	var dups int
	if err := pool.QueryRow(cctx, `SELECT count(*) FROM (SELECT 1 FROM chaos_effects GROUP BY run_id, step HAVING count(*) > 1) d`).Scan(&dups); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	kills := f.kills
	f.mu.Unlock()
	t.Logf("%d runs (%d submissions retried), %d kills (slowest restart %v), %d takeovers, %d steps whose effect was repeated, %v wall time",
		len(runs), retried, kills, slowest.Round(time.Millisecond), takeovers, dups, time.Since(start).Round(time.Millisecond))
	f.mu.Lock()
	if n := len(f.postTimes); n > 0 {
		slices.Sort(f.postTimes)
		t.Logf("POSTs that started a run took %v (median), %v (p95), %v (max)", f.postTimes[n/2].Round(time.Millisecond),
			f.postTimes[n*95/100].Round(time.Millisecond), f.postTimes[n-1].Round(time.Millisecond))
	}
	samples := 0
	for thread, notes := range f.notes {
		if len(notes) > 1 && samples < 3 {
			samples++
			t.Logf("a retried submission, thread %s: %s", thread, strings.Join(notes, "; "))
		}
	}
	f.mu.Unlock()
	if kills == 0 || takeovers == 0 {
		t.Errorf("the chaos did nothing: %d kills, %d takeovers", kills, takeovers)
	}
}

// pausedRuns is how many runs TestChaosPausedReplicaIsFencedOut starts
// on the replica it pauses.
const pausedRuns = 20

// A replica paused (SIGSTOP) for three lease TTLs with runs in flight
// loses them to the other replica, which finishes them; resumed, it finds
// its effects and checkpoint writes refused: nothing it does after the
// takeover lands.
func TestChaosPausedReplicaIsFencedOut(t *testing.T) {
	base := pgtest.URL(t)
	pool := pgtest.Schema(t, nil)
	createEffects(t, pool)
	f := newFleet(t, schemaURL(t, base, pool), 2, leaseTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	a := f.id(0)

	runs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range pausedRuns {
		thread := uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			var run runObj
			if _, err := call("POST", f.addr(0), "/threads/"+thread+"/runs",
				map[string]any{"assistant_id": "chaos", "input": map[string]any{"n": 0}, "if_not_exists": "create"}, &run); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			runs[thread] = run.RunID
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Paused mid-run, not while its runs still write their first
	// checkpoints: most of them are then inside a step, whose effect
	// the replica attempts as soon as it resumes.
	for {
		var started int
		if err := pool.QueryRow(ctx, `SELECT count(DISTINCT thread_id) FROM chaos_effects WHERE step >= 2`).Scan(&started); err != nil {
			t.Fatal(err)
		}
		if started == pausedRuns {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d runs made their second step", started, pausedRuns)
		}
		pause(ctx, 5*time.Millisecond)
	}
	f.signal(0, syscall.SIGSTOP)
	stopped := time.Now()
	// The runs A held when it stopped: B must take each of them over.
	held := map[string]int64{}
	rows, err := pool.Query(ctx, `SELECT thread_id, fence FROM studio_thread_leases WHERE holder = $1 AND run_id IS NOT NULL`, a)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var thread string
		var fence int64
		if err := rows.Scan(&thread, &fence); err != nil {
			t.Fatal(err)
		}
		held[thread] = fence
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(held) == 0 {
		t.Fatalf("replica %s finished all %d runs before it was paused: nothing to take over", a, pausedRuns)
	}
	pause(ctx, 3*leaseTTL) // the pause itself, not a synchronisation
	// While A sleeps, B has taken over every run A held.
	var stillA int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM studio_thread_leases WHERE holder = $1 AND run_id IS NOT NULL`, a).Scan(&stillA); err != nil {
		t.Fatal(err)
	}
	if stillA > 0 {
		t.Errorf("after %v paused, replica %s still holds %d leases", time.Since(stopped).Round(time.Millisecond), a, stillA)
	}
	f.signal(0, syscall.SIGCONT)

	takeovers := checkThreads(t, ctx, f, pool, runs, waitFor)
	// Every effect A made for a run it lost is older than B's first one
	// on that thread (checkThreads checks the order), and B made some.
	for thread, fence := range held {
		var later int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM chaos_effects WHERE thread_id = $1 AND fence > $2`, thread, fence).Scan(&later); err != nil {
			t.Fatal(err)
		}
		if later == 0 {
			t.Errorf("thread %s: no effect after fence %d: the run A held was not taken over", thread, fence)
		}
	}
	// Resumed, A went on with the steps it was in, and their effects
	// were refused (its checkpoint writes too: checkThreads found no
	// fork).
	refused := 0
	for ; refused == 0 && ctx.Err() == nil; pause(ctx, 50*time.Millisecond) {
		refused = f.count(a, effectRefused)
	}
	if refused == 0 {
		t.Errorf("replica %s, resumed, never tried an effect for the runs it lost: the test did not test the fence", a)
	}
	t.Logf("%d runs, %d held by the paused replica, %d takeovers, %d effects of the resumed replica refused", len(runs), len(held), takeovers, refused)
}

// restartRuns is how many runs are in flight when
// TestChaosPostgresRestart restarts the database, for restartDowntime.
const (
	restartRuns     = 60
	restartDowntime = 5 * time.Second
)

// Three replicas run sixty runs when their Postgres (a cluster of the
// test's own) stops for five seconds, longer than the leases: every
// replica's /healthz says 503 during the outage and 200 after it, and
// every run still succeeds, on one chain of checkpoints, with no stale
// effect.
func TestChaosPostgresRestart(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	createEffects(t, pool)
	f := newFleet(t, cluster.URL, 3, leaseTTL)

	runs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k := range restartRuns {
		thread := uuid.NewString()
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, _, err := submit(ctx, f, k%3, thread)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			runs[thread] = id
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Mid-load: every run has made a step, none is near its end.
	for {
		var started int
		if err := pool.QueryRow(ctx, `SELECT count(DISTINCT thread_id) FROM chaos_effects`).Scan(&started); err != nil {
			t.Fatal(err)
		}
		if started == restartRuns {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d runs made a step", started, restartRuns)
		}
		pause(ctx, 5*time.Millisecond)
	}
	var active int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM studio_thread_leases WHERE run_id IS NOT NULL`).Scan(&active); err != nil {
		t.Fatal(err)
	}
	cluster.Stop(t)
	down := time.Now()
	for i := range 3 {
		if code := healthUntil(ctx, f.addr(i), http.StatusServiceUnavailable); code != http.StatusServiceUnavailable {
			t.Errorf("replica %s: /healthz answers %d with the database down, want 503", f.id(i), code)
		}
	}
	pause(ctx, restartDowntime-time.Since(down)) // the outage itself
	cluster.Start(t)
	for i := range 3 {
		if code := healthUntil(ctx, f.addr(i), http.StatusOK); code != http.StatusOK {
			t.Errorf("replica %s: /healthz answers %d once the database is back, want 200", f.id(i), code)
		}
	}
	up := time.Since(down)

	takeovers := checkThreads(t, ctx, f, pool, runs, waitFor)
	t.Logf("%d runs, %d active at the restart, %v until every /healthz said 200 again, %d takeovers", len(runs), active, up.Round(time.Millisecond), takeovers)
}

// healthUntil polls base's /healthz until it answers want, or ctx ends;
// it returns the last answer (0: no answer).
func healthUntil(ctx context.Context, base string, want int) int {
	code := 0
	for ctx.Err() == nil {
		code, _ = call(http.MethodGet, base, "/healthz", nil, nil)
		if code == want {
			return code
		}
		pause(ctx, 50*time.Millisecond)
	}
	return code
}

// A takeover's job can die with the worker that fetched it: river marks
// a job running when a worker fetches it, and a replica killed before its
// worker's first transaction (the one that takes the lease) leaves the
// lease waiting for a worker (holder ”) on a job river will not hand to
// anyone else, as it is running, until its rescuer's hour. The chaos of
// TestChaosKillReplicas meets this about one run in ten (a kill every 2 s
// against a 2 s lease: the next kill lands as the reaper dispatches the
// previous one's runs). Here the test leaves the database as that replica
// would: the run's holder is killed, its lease reaped, and its job marked
// as fetched by a worker that is gone. A live replica must still finish
// the run.
//
// The reaper gives such a run a new job once its redispatch_at has
// passed (a lease's length after its job was made).
func TestChaosTakeoverJobLostWithItsWorker(t *testing.T) {
	base := pgtest.URL(t)
	pool := pgtest.Schema(t, nil)
	createEffects(t, pool)
	f := newFleet(t, schemaURL(t, base, pool), 1, leaseTTL)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	thread := uuid.NewString()
	id, _, err := submit(ctx, f, 0, thread)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var made int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM chaos_effects WHERE thread_id = $1`, thread).Scan(&made); err != nil {
			t.Fatal(err)
		}
		if made >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the run made no step")
		}
		pause(ctx, 5*time.Millisecond)
	}
	f.kill(0)
	// What the reaper and the dying worker of another replica leave: the
	// lease bumped and waiting for a worker, its job taken by nobody alive.
	tag, err := pool.Exec(ctx, `WITH l AS (
			UPDATE studio_thread_leases SET holder = '', expires_at = NULL, fence = fence + 1
			WHERE thread_id = $1 AND run_id = $2 AND holder <> '' RETURNING job_id)
		UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now(),
			attempted_by = array_append(attempted_by, 'ghost-replica')
		WHERE id = (SELECT job_id FROM l)`, thread, id)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("the run's lease and job were not found to set up the lost worker (%d rows)", tag.RowsAffected())
	}
	f.start(0)
	// Several lease TTLs: long enough for any reasonable recovery.
	checkThreads(t, ctx, f, pool, map[string]string{thread: id}, 10*leaseTTL)
}

// killReplicas is the fault schedule: every 2 s a live replica is killed,
// and restarted 300 ms later (in the background: a restart takes a
// while, and the schedule does not wait for it), until submitted is
// closed and the window of for has passed. wait waits for the schedule
// and its restarts to end and returns the longest restart.
func killReplicas(ctx context.Context, t *testing.T, f *fleet, submitted <-chan struct{}, window time.Duration) (wait func() time.Duration) {
	chaosDone := make(chan struct{})
	var restarts sync.WaitGroup
	var slowest time.Duration
	var restartMu sync.Mutex
	go func() {
		defer close(chaosDone)
		killUntil := time.Now().Add(window)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case <-submitted:
				if time.Now().After(killUntil) {
					return
				}
			default:
			}
			var up []int
			for i := range f.size() {
				if f.addr(i) != "" {
					up = append(up, i)
				}
			}
			if len(up) == 0 {
				continue
			}
			i := up[rand.IntN(len(up))]
			f.kill(i)
			restarts.Add(1)
			go func() {
				defer restarts.Done()
				pause(ctx, 300*time.Millisecond)
				began := time.Now()
				if err := f.restart(i); err != nil {
					t.Error(err)
				}
				restartMu.Lock()
				slowest = max(slowest, time.Since(began))
				restartMu.Unlock()
			}()
		}
	}()
	return func() time.Duration {
		<-chaosDone
		restarts.Wait()
		restartMu.Lock()
		defer restartMu.Unlock()
		return slowest
	}
}

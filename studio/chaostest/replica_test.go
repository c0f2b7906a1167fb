package chaostest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgfence"
	"github.com/superstep-dev/superstep/internal/pgretry"
	"github.com/superstep-dev/superstep/studio"
)

// The environment a replica process reads: when envReplica is set the
// test binary is a replica (TestMain), never a test run.
const (
	envReplica = "SUPERSTEP_CHAOS_REPLICA" // the replica's id
	envURL     = "SUPERSTEP_CHAOS_DATABASE_URL"
	envTTL     = "SUPERSTEP_CHAOS_LEASE_TTL"
	addrLine   = "CHAOS_ADDR="
	// effectRefused is logged by a replica whose effect was fenced out.
	effectRefused = "chaos: effect refused"
)

// The replicas' run timings: a silent replica loses its runs after
// leaseTTL. The kill tests use killTTL, well below the 2 s between
// kills, so that a step a kill cut is run again (by the takeover) before
// the next kill: two kills in one step would run it three times, which
// no runtime can prevent. The others keep the longer leaseTTL, which
// rides out the slow renewals of a loaded machine.
const (
	leaseTTL   = 2 * time.Second
	killTTL    = time.Second
	renewEvery = 200 * time.Millisecond
	reapEvery  = 250 * time.Millisecond
)

// steps is how many times the chaos graph's node runs in a run.
const steps = 20

func TestMain(m *testing.M) {
	if id := os.Getenv(envReplica); id != "" {
		ttl, err := time.ParseDuration(os.Getenv(envTTL))
		if err != nil {
			ttl = leaseTTL
		}
		os.Exit(replicaMain(id, os.Getenv(envURL), ttl))
	}
	os.Exit(m.Run())
}

// replicaMain serves a Studio with the chaos graph until SIGTERM, and
// prints its bound address on stdout for the parent test.
func replicaMain(id, dbURL string, ttl time.Duration) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("replica", id)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The parent holds our stdin open: its end (the test binary died or
	// timed out) ends this replica, which must not outlive the test.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	effects, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		log.Error("open the effects pool", "error", err)
		return 2
	}
	defer effects.Close()
	cfg := studio.Config{
		DatabaseURL: dbURL,
		Addr:        "127.0.0.1:0",
		Logger:      log,
		Runs:        studio.RunsConfig{ID: id, LeaseTTL: ttl, RenewEvery: renewEvery, ReapEvery: reapEvery},
		Build:       chaosGraph(effects, log),
	}
	err = studio.Serve(ctx, cfg, func(a net.Addr) { fmt.Printf("%s%s\n", addrLine, a) })
	if err != nil {
		log.Error("serve", "error", err)
		return 1
	}
	return 0
}

type chaosState struct {
	N int `json:"n"`
}

// chaosGraph is one node run steps times. Each step is a side effect
// recorded in chaos_effects with the fence the run's context carries,
// checked in the same transaction as the insert: the effect a replica
// that lost its lease could still make is refused, as its checkpoints
// are.
func chaosGraph(effects *pgxpool.Pool, log *slog.Logger) func(studio.Backends) (map[string]engine.Compiled, error) {
	return func(b studio.Backends) (map[string]engine.Compiled, error) {
		g := engine.NewStateGraph[chaosState]()
		g.AddNode("step", func(ctx context.Context, s chaosState) (engine.Output, error) {
			select {
			case <-time.After(time.Duration(20+rand.IntN(41)) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			task, ok := engine.CurrentTask(ctx)
			if !ok {
				return nil, errors.New("chaos: the node has no task context")
			}
			f, ok := fenceToken(ctx, task.ThreadID)
			if !ok {
				return nil, fmt.Errorf("chaos: run %s of thread %s has no fence on its context", task.RunID, task.ThreadID)
			}
			// A database restart must not fail the run: the effect rides
			// it out as the runtime's own writes do, and an insert whose
			// outcome was lost is looked for before it is made again.
			err := pgretry.Do(ctx, 0, pgretry.Op{
				Run: func(ctx context.Context) error {
					return pgfence.Exec(ctx, effects, task.ThreadID,
						`INSERT INTO chaos_effects (run_id, thread_id, step, fence, at) VALUES ($1, $2, $3, $4, clock_timestamp())`,
						task.RunID, task.ThreadID, s.N+1, f)
				},
				Landed: func(ctx context.Context) (bool, error) {
					var ok bool
					err := effects.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM chaos_effects WHERE run_id = $1 AND step = $2 AND fence = $3)`,
						task.RunID, s.N+1, f).Scan(&ok)
					return ok, err
				},
			})
			if errors.Is(err, checkpoints.ErrFenced) {
				// The parent counts these: the proof that a replica
				// that lost its lease tried, and was refused.
				log.Warn(effectRefused, "thread", task.ThreadID, "step", s.N+1, "fence", f)
			}
			if err != nil {
				return nil, fmt.Errorf("chaos: record step %d of run %s: %w", s.N+1, task.RunID, err)
			}
			return engine.Update{"n": s.N + 1}, nil
		})
		g.AddEdge(engine.Start, "step")
		g.AddConditionalEdges("step", func(_ context.Context, s chaosState) (engine.Route, error) {
			if s.N >= steps {
				return engine.To(engine.End), nil
			}
			return engine.To("step"), nil
		}, nil)
		cg, err := g.Compile(engine.CompileOptions{Checkpointer: b.Checkpointer})
		return map[string]engine.Compiled{"chaos": cg}, err
	}
}

// fenceToken is the token of the fence ctx carries for thread (checkpoints.FenceFrom, checked to be for thread).
func fenceToken(ctx context.Context, thread string) (int64, bool) {
	f, err := pgfence.For(ctx, thread)
	if err != nil || f == nil {
		return 0, false
	}
	return f.Token, true
}

// setProcAttr sets what the platform offers to end a replica with the
// test binary (see procattr_linux_test.go); stdin's end does elsewhere.
var setProcAttr = func(*exec.Cmd) {}

// replica is one replica process of a fleet slot.
type replica struct {
	id   string
	cmd  *exec.Cmd
	addr string // http://host:port
	done chan struct{}
}

// fleet is the replicas of a test, one per slot, restarted in place.
type fleet struct {
	t     *testing.T
	dbURL string
	ttl   time.Duration // the replicas' lease TTL
	logs  string        // folder of the replicas' stderr

	mu    sync.Mutex
	slots []*replica // nil while a slot's replica is down
	gen   []int
	kills int
	notes map[string][]string // what the test asked of each thread, with the answers
	// postTimes are how long the POSTs that started a run took.
	postTimes []time.Duration
}

// size is how many replica slots the fleet has.
func (f *fleet) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.slots)
}

// note records a request made for thread and its answer.
func (f *fleet) note(thread, format string, args ...any) {
	msg := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notes == nil {
		f.notes = map[string][]string{}
	}
	f.notes[thread] = append(f.notes[thread], msg)
}

// schemaURL is TEST_DATABASE_URL with the search_path of the schema the
// pool (from pgtest.Schema) uses, so replica processes share its tables.
func schemaURL(t *testing.T, base string, pool *pgxpool.Pool) string {
	t.Helper()
	var schema string
	if err := pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatalf("read the test schema's name: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	// pgx sends parameters it does not know as run-time settings.
	q.Set("search_path", schema+",public")
	u.RawQuery = q.Encode()
	return u.String()
}

// newFleet starts n replicas on dbURL whose leases last ttl.
func newFleet(t *testing.T, dbURL string, n int, ttl time.Duration) *fleet {
	f := &fleet{t: t, dbURL: dbURL, ttl: ttl, logs: t.TempDir(), slots: make([]*replica, n), gen: make([]int, n)}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, r := range f.slots {
			if r != nil {
				_ = r.cmd.Process.Signal(syscall.SIGKILL)
				<-r.done
				f.slots[i] = nil
			}
		}
		f.checkLogs()
		if t.Failed() {
			f.dumpLogs()
		}
	})
	for i := range n {
		f.start(i)
	}
	return f
}

// start starts slot i's replica and waits until it serves.
func (f *fleet) start(i int) {
	f.t.Helper()
	if err := f.restart(i); err != nil {
		f.t.Fatal(err)
	}
}

// restart starts slot i's replica and waits until it serves; it may be
// called from any goroutine.
func (f *fleet) restart(i int) error {
	f.mu.Lock()
	f.gen[i]++
	id := fmt.Sprintf("r%d.%d", i, f.gen[i])
	f.mu.Unlock()
	logf, err := os.Create(fmt.Sprintf("%s/%s.log", f.logs, id))
	if err != nil {
		return fmt.Errorf("replica %s: log file: %w", id, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envReplica+"="+id, envURL+"="+f.dbURL, envTTL+"="+f.ttl.String())
	cmd.Stderr = logf
	setProcAttr(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return fmt.Errorf("replica %s: %w", id, err)
	}
	// Never written nor closed while the test lives: see replicaMain.
	if _, err := cmd.StdinPipe(); err != nil {
		logf.Close()
		return fmt.Errorf("replica %s: %w", id, err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start replica %s: %w", id, err)
	}
	r := &replica{id: id, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), addrLine); ok {
				addr <- a
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		logf.Close()
		close(r.done)
	}()
	select {
	case a := <-addr:
		r.addr = "http://" + a
	case <-r.done:
		return fmt.Errorf("replica %s exited before serving: %s", id, f.tail(id))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-r.done
		return fmt.Errorf("replica %s did not serve within 30 s: %s", id, f.tail(id))
	}
	f.mu.Lock()
	f.slots[i] = r
	f.mu.Unlock()
	return nil
}

// kill SIGKILLs slot i's replica and waits for it to be gone.
func (f *fleet) kill(i int) {
	f.mu.Lock()
	r := f.slots[i]
	f.slots[i] = nil
	if r != nil {
		f.kills++
	}
	f.mu.Unlock()
	if r == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// signal sends sig to slot i's replica (SIGSTOP, SIGCONT).
func (f *fleet) signal(i int, sig syscall.Signal) {
	f.t.Helper()
	f.mu.Lock()
	r := f.slots[i]
	f.mu.Unlock()
	if r == nil {
		f.t.Fatalf("slot %d has no replica to signal", i)
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		f.t.Fatalf("signal replica %s: %v", r.id, err)
	}
}

// addr is the base URL of slot i's replica, "" while it is down.
func (f *fleet) addr(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.slots[i]; r != nil {
		return r.addr
	}
	return ""
}

// id is slot i's replica's id.
func (f *fleet) id(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.slots[i]; r != nil {
		return r.id
	}
	return ""
}

// live is the base URL of a live replica, trying slots from i on ("" if
// none is up).
func (f *fleet) live(i int) string {
	n := len(f.slots)
	for k := range n {
		if a := f.addr((i + k) % n); a != "" {
			return a
		}
	}
	return ""
}

func (f *fleet) tail(id string) string {
	b, _ := os.ReadFile(fmt.Sprintf("%s/%s.log", f.logs, id))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// dumpLogs puts the end of every replica's log in the test's output.
func (f *fleet) dumpLogs() {
	entries, _ := os.ReadDir(f.logs)
	for _, e := range entries {
		id := strings.TrimSuffix(e.Name(), ".log")
		if s := f.tail(id); s != "" {
			f.t.Logf("--- replica %s log (end):\n%s", id, s)
		}
	}
}

// checkLogs fails the test on a data race or a panic in any replica
// (their logs are their stderr; the race detector reports there).
func (f *fleet) checkLogs() {
	entries, _ := os.ReadDir(f.logs)
	for _, e := range entries {
		b, err := os.ReadFile(f.logs + "/" + e.Name())
		if err != nil {
			f.t.Errorf("read the log of replica %s: %v", e.Name(), err)
			continue
		}
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "fatal error:"} {
			if strings.Contains(string(b), bad) {
				f.t.Errorf("replica %s: %q in its log", strings.TrimSuffix(e.Name(), ".log"), bad)
			}
		}
	}
}

// count is how many lines of replica id's log contain s.
func (f *fleet) count(id, s string) int {
	b, _ := os.ReadFile(fmt.Sprintf("%s/%s.log", f.logs, id))
	return strings.Count(string(b), s)
}

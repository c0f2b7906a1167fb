package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// rowCounts counts a thread's checkpoints, writes and blobs.
func rowCounts(t *testing.T, pool *pgxpool.Pool, thread string) [3]int {
	t.Helper()
	var n [3]int
	err := pool.QueryRow(context.Background(), `SELECT
		(SELECT count(*) FROM checkpoints WHERE thread_id = $1),
		`+pgsaver.WritesStored("thread_id = $1")+`,
		(SELECT count(*) FROM checkpoint_blobs WHERE thread_id = $1)`, thread).Scan(&n[0], &n[1], &n[2])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// bigValue is kept in a blob, so a put of it takes the blob path.
const bigValue = `"` + "a value long enough to be kept in a blob rather than inline, " +
	"since it is more than one hundred and twenty-eight bytes of JSON in all" + `"`

// TestFencedWrites: writes carrying the lease's fence land; once another
// replica has taken the thread over (the fence bumped), every write path
// with the old fence fails with ErrFenced and writes nothing, while writes
// without a fence are unaffected.
func TestFencedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	pgsaver.HoldLease(t, pool, "t", 3)
	held := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 3})
	one := []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}
	step := []checkpoints.TaskWrites{{TaskID: "step-task", Writes: one}}

	root, err := s.Put(held, checkpoints.Config{ThreadID: "t"}, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatalf("Put with the holder's fence: %v", err)
	}
	if err := s.PutWrites(held, root, one, "task", ""); err != nil {
		t.Fatalf("PutWrites with the holder's fence: %v", err)
	}
	head, err := s.PutStep(held, root, step, stepCheckpoint(map[string]string{"n": "1", "doc": bigValue}, map[string]int64{"n": 2, "doc": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2, "doc": 1})
	if err != nil {
		t.Fatalf("PutStep with the holder's fence: %v", err)
	}
	if got, want := rowCounts(t, pool, "t"), [3]int{2, 2, 1}; got != want {
		t.Fatalf("rows (checkpoints, writes, blobs) after the holder's writes = %v, want %v", got, want)
	}

	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET fence = 4 WHERE thread_id = 't'`); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, pool, "t")
	// A fresh saver remembers nothing, so its put is resolved on the
	// server: the third shape of put batch.
	for name, sv := range map[string]*pgsaver.Saver{"warm": s, "cold": pgsaver.New(pool, nil)} {
		puts := map[string]func() error{
			"Put inline": func() error {
				_, err := sv.Put(held, head, stepCheckpoint(map[string]string{"n": "2"}, map[string]int64{"n": 3, "doc": 1}),
					checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"n": 3})
				return err
			},
			"Put blob": func() error {
				_, err := sv.Put(held, head, stepCheckpoint(map[string]string{"doc": bigValue[:len(bigValue)-1] + `!"`}, map[string]int64{"n": 2, "doc": 2}),
					checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"doc": 2})
				return err
			},
			"PutStep": func() error {
				_, err := sv.PutStep(held, head, step, stepCheckpoint(map[string]string{"n": "2"}, map[string]int64{"n": 3, "doc": 1}),
					checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"n": 3})
				return err
			},
			"PutWrites": func() error { return sv.PutWrites(held, head, one, "late-task", "") },
		}
		for op, put := range puts {
			err := put()
			if !errors.Is(err, checkpoints.ErrFenced) {
				t.Errorf("%s %s with a stale fence = %v, want ErrFenced", name, op, err)
			} else if !strings.Contains(err.Error(), `"t"`) && !strings.Contains(err.Error(), "thread t ") {
				t.Errorf("%s %s: %q does not name the thread", name, op, err)
			}
		}
	}
	if got := rowCounts(t, pool, "t"); got != before {
		t.Fatalf("fenced-out writes wrote rows: (checkpoints, writes, blobs) %v, before %v", got, before)
	}

	// Without a fence (a Studio page's state update, say), and with the
	// new holder's fence, writes go through.
	if err := s.PutWrites(ctx, head, one, "unfenced-task", ""); err != nil {
		t.Fatalf("PutWrites without a fence: %v", err)
	}
	newHolder := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 4})
	if _, err := s.Put(newHolder, head, stepCheckpoint(map[string]string{"n": "2"}, map[string]int64{"n": 3, "doc": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"n": 3}); err != nil {
		t.Fatalf("Put with the new holder's fence: %v", err)
	}
	if got, want := rowCounts(t, pool, "t"), [3]int{before[0] + 1, before[1] + 1, before[2]}; got != want {
		t.Fatalf("rows after the unfenced and new holder's writes = %v, want %v", got, want)
	}
}

// TestFenceOfAnotherThreadIsRefused: a fence names the thread it guards;
// using it for a write to another thread is a bug the saver reports
// instead of checking the wrong lease.
func TestFenceOfAnotherThreadIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	pgsaver.HoldLease(t, pool, "mine", 1)
	fctx := checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "mine", Token: 1})
	cfg := checkpoints.Config{ThreadID: "other", CheckpointID: checkpoints.NewID()}
	_, putErr := s.Put(fctx, checkpoints.Config{ThreadID: "other"}, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	_, stepErr := s.PutStep(fctx, cfg, nil, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	writesErr := s.PutWrites(fctx, cfg, []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}, "task", "")
	for op, err := range map[string]error{"Put": putErr, "PutStep": stepErr, "PutWrites": writesErr} {
		if err == nil || errors.Is(err, checkpoints.ErrFenced) || !strings.Contains(err.Error(), `"mine"`) || !strings.Contains(err.Error(), `"other"`) {
			t.Errorf("%s to thread other with thread mine's fence = %v; want an error naming both threads", op, err)
		}
	}
	if got := rowCounts(t, pool, "other"); got != [3]int{} {
		t.Fatalf("rows written to thread other: %v", got)
	}
}

// TestMemorySaverIgnoresFences: fences are a Postgres concept; the memory
// saver, one process, writes whatever fence the context carries.
func TestMemorySaverIgnoresFences(t *testing.T) {
	t.Parallel()
	fctx := checkpoints.WithFence(context.Background(), checkpoints.Fence{Thread: "elsewhere", Token: 7})
	m := checkpoints.NewMemory()
	cfg, err := m.Put(fctx, checkpoints.Config{ThreadID: "t"}, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.PutWrites(fctx, cfg, []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}, "task", ""); err != nil {
		t.Fatal(err)
	}
}

// fenceOn returns ctx with thread's fence at a token.
func fenceOn(ctx context.Context, thread string) func(token int64) context.Context {
	return func(token int64) context.Context {
		return checkpoints.WithFence(ctx, checkpoints.Fence{Thread: thread, Token: token})
	}
}

// TestFencedWritesDuringTakeover: while another replica takes the thread
// over (moves the fence, which takes the lease's lock exclusively until
// it commits), a fenced write waits for the takeover, then reads the
// lease as it committed: the old holder's write is refused and writes
// nothing, the new holder's lands. A check reading the lease as of the
// statement's start, before the lock, would get both wrong. A step with
// small values is one statement, its fence checked in it (the tracer,
// which sees no batch, sees that statement alone); a task's writes saved
// on their own go after the check in a batch.
func TestFencedWritesDuringTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	cfg := pool.Config()
	tracer := &sqlTracer{}
	cfg.ConnConfig.Tracer = tracer
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	const thread = "takeover-during-a-write" // advisory locks are the database's, not the schema's
	s := pgsaver.New(traced, nil)
	lease := int64(3)
	pgsaver.HoldLease(t, pool, thread, lease)
	fenced := fenceOn(ctx, thread)
	one := []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}
	head, err := s.PutStep(fenced(lease), checkpoints.Config{ThreadID: thread}, nil, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatalf("the holder's first step: %v", err)
	}
	n := 0 // the steps saved after the first
	ops := []struct {
		name  string
		write func(ctx context.Context) error
		adds  [3]int // the rows (checkpoints, writes, blobs) it saves
		alone bool   // one statement, with its fence check
	}{
		{name: "PutStep", adds: [3]int{1, 1, 0}, alone: true, write: func(ctx context.Context) error {
			next, err := s.PutStep(ctx, head, []checkpoints.TaskWrites{{TaskID: fmt.Sprint("step-task-", n), Writes: one}},
				stepCheckpoint(map[string]string{"n": fmt.Sprint(n + 1)}, map[string]int64{"n": int64(n + 2)}),
				checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: n}, map[string]int64{"n": int64(n + 2)})
			if err == nil {
				head = next
				n++
			}
			return err
		}},
		{name: "PutWrites", adds: [3]int{0, 1, 0}, write: func(ctx context.Context) error {
			return s.PutWrites(ctx, head, one, fmt.Sprint("early-task-", lease), "")
		}},
	}
	for _, op := range ops {
		for _, holder := range []string{"old holder", "new holder"} {
			name := op.name + ", " + holder
			token := lease // the old holder's
			lease++
			if holder == "new holder" {
				token = lease
			}
			takeover, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Were the test to stop with the takeover open, dropping its
			// schema would wait for it forever.
			t.Cleanup(func() { _ = takeover.Rollback(ctx) })
			if _, err := takeover.Exec(ctx, `UPDATE studio_thread_leases SET fence = $2 WHERE thread_id = $1`, thread, lease); err != nil {
				t.Fatal(err)
			}
			before := rowCounts(t, pool, thread)
			tracer.mu.Lock()
			tracer.sql = nil
			tracer.mu.Unlock()
			done := make(chan error, 1)
			go func() { done <- op.write(fenced(token)) }()
			// The write waits for the takeover's lock.
			for waiting := false; !waiting; {
				select {
				case err := <-done:
					t.Fatalf("%s: the write returned (%v) while the takeover held the lease's lock", name, err)
				default:
				}
				if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
					AND classid = 1937007974 AND objid = hashtext($1)::oid)`, thread).Scan(&waiting); err != nil {
					t.Fatal(err)
				}
			}
			if err := takeover.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-done
			tracer.mu.Lock()
			var sent []string
			for _, sql := range tracer.sql {
				if strings.Contains(sql, "INSERT INTO checkpoint") {
					sent = append(sent, sql)
				}
			}
			tracer.mu.Unlock()
			if op.alone && (len(sent) != 1 || !strings.Contains(sent[0], "studio_fence")) {
				t.Errorf("%s: the write sent %d statements of its own, want one with its fence check: %q", name, len(sent), sent)
			}
			after := rowCounts(t, pool, thread)
			want := [3]int{before[0] + op.adds[0], before[1] + op.adds[1], before[2] + op.adds[2]}
			switch {
			case holder == "old holder" && !errors.Is(err, checkpoints.ErrFenced):
				t.Errorf("%s: write = %v, want ErrFenced", name, err)
			case holder == "old holder" && after != before:
				t.Errorf("%s: the refused write saved rows: %v, before %v", name, after, before)
			case holder == "new holder" && err != nil:
				t.Errorf("%s: write = %v, want it saved", name, err)
			case holder == "new holder" && after != want:
				t.Errorf("%s: rows %v after the write, want %v", name, after, want)
			}
		}
	}
}

// TestStaleFenceRefusesACarriedWrite: the old holder of a thread, still
// running a task after a takeover, saves the task's write, which the new
// holder's step from the same checkpoint already carries. The write
// changes nothing either way, but it is refused (ErrFenced), so the old
// holder learns at once that it lost the thread: the check must not hang
// on whether the write has anything left to insert.
func TestStaleFenceRefusesACarriedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	pgsaver.HoldLease(t, pool, "t", 3)
	fenced := fenceOn(ctx, "t")
	root, err := s.PutStep(fenced(3), checkpoints.Config{ThreadID: "t"}, nil, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET fence = 4 WHERE thread_id = 't'`); err != nil {
		t.Fatal(err)
	}
	one := []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}
	if _, err := s.PutStep(fenced(4), root, []checkpoints.TaskWrites{{TaskID: "task", Writes: one}},
		stepCheckpoint(map[string]string{"n": "1"}, map[string]int64{"n": 2}), checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2}); err != nil {
		t.Fatalf("the new holder's step: %v", err)
	}
	before := rowCounts(t, pool, "t")
	for _, w := range [][]checkpoints.Write{one, {one[0], {Channel: "n", Value: json.RawMessage("2")}}} {
		if err := s.PutWrites(fenced(3), root, w, "task", ""); !errors.Is(err, checkpoints.ErrFenced) {
			t.Errorf("the old holder's %d carried writes = %v, want ErrFenced", len(w), err)
		}
	}
	if after := rowCounts(t, pool, "t"); after != before {
		t.Errorf("rows went from %v to %v", before, after)
	}
}

// TestStaleFenceRefusedOnTheEncodedPath: a fenced step with small values
// goes as the statement the saver prepares and encodes itself (no tracer
// on the pool), and there too the old holder's step is refused and
// writes nothing once the thread was taken over, and the new holder's
// lands.
func TestStaleFenceRefusedOnTheEncodedPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := oneSession(t, nil) // whose prepared statements the test reads
	s := pgsaver.New(pool, nil)
	pgsaver.HoldLease(t, pool, "t", 3)
	fenced := fenceOn(ctx, "t")
	step := func(token int64, parent checkpoints.Config, n int) (checkpoints.Config, error) {
		return s.PutStep(fenced(token), parent, []checkpoints.TaskWrites{{TaskID: fmt.Sprint("task-", n), Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}}},
			stepCheckpoint(map[string]string{"n": fmt.Sprint(n)}, map[string]int64{"n": int64(n + 1)}), checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: n}, map[string]int64{"n": int64(n + 1)})
	}
	head, err := s.PutStep(fenced(3), checkpoints.Config{ThreadID: "t"}, nil, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	if head, err = step(3, head, 1); err != nil {
		t.Fatalf("the holder's step: %v", err)
	}
	var prepared bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name = 'pgsaver_put_inline_fenced')`).Scan(&prepared); err != nil {
		t.Fatal(err)
	}
	if !prepared {
		t.Fatal("the holder's step did not go as the saver's own fenced statement")
	}
	if _, err := pool.Exec(ctx, `UPDATE studio_thread_leases SET fence = 4 WHERE thread_id = 't'`); err != nil {
		t.Fatal(err)
	}
	before := rowCounts(t, pool, "t")
	if _, err := step(3, head, 2); !errors.Is(err, checkpoints.ErrFenced) {
		t.Errorf("the old holder's step = %v, want ErrFenced", err)
	}
	if after := rowCounts(t, pool, "t"); after != before {
		t.Errorf("the refused step wrote rows: %v, before %v", after, before)
	}
	if _, err := step(4, head, 2); err != nil {
		t.Errorf("the new holder's step = %v", err)
	}
}

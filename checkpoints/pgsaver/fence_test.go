package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
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

// TestFencedStepDuringTakeover: a step with small values under a fence is
// one statement, its fence checked in it (the tracer sees that statement
// alone). While another replica takes the thread over (moves the fence,
// which takes the lease's lock exclusively until it commits), the step
// waits for the takeover, then reads the lease as it committed: the old
// holder's step is refused and writes nothing, the new holder's lands.
// A check reading the lease as of the statement's start, before the
// lock, would get both wrong.
func TestFencedStepDuringTakeover(t *testing.T) {
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
	const thread = "takeover-during-a-step" // advisory locks are the database's, not the schema's
	s := pgsaver.New(traced, nil)
	pgsaver.HoldLease(t, pool, thread, 3)
	fenced := func(token int64) context.Context {
		return checkpoints.WithFence(ctx, checkpoints.Fence{Thread: thread, Token: token})
	}
	one := []checkpoints.TaskWrites{{TaskID: "step-task", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}}}
	head, err := s.PutStep(fenced(3), checkpoints.Config{ThreadID: thread}, nil, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatalf("the holder's first step: %v", err)
	}

	for _, tc := range []struct {
		name  string
		fence int64 // the takeover moves the lease to it
		token int64 // the step's
		want  error
	}{
		{name: "old holder", fence: 4, token: 3, want: checkpoints.ErrFenced},
		{name: "new holder", fence: 5, token: 5},
	} {
		takeover, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Were the test to stop with the takeover open, dropping its
		// schema would wait for it forever.
		t.Cleanup(func() { _ = takeover.Rollback(ctx) })
		if _, err := takeover.Exec(ctx, `UPDATE studio_thread_leases SET fence = $2 WHERE thread_id = $1`, thread, tc.fence); err != nil {
			t.Fatal(err)
		}
		before := rowCounts(t, pool, thread)
		tracer.mu.Lock()
		tracer.sql = nil
		tracer.mu.Unlock()
		done := make(chan error, 1)
		var next checkpoints.Config
		go func() {
			var err error
			next, err = s.PutStep(fenced(tc.token), head, one, stepCheckpoint(map[string]string{"n": "1"}, map[string]int64{"n": 2}),
				checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2})
			done <- err
		}()
		// The step waits for the takeover's lock.
		for waiting := false; !waiting; {
			select {
			case err := <-done:
				t.Fatalf("%s: the step returned (%v) while the takeover held the lease's lock", tc.name, err)
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
		var puts []string
		for _, sql := range tracer.sql {
			if strings.Contains(sql, "INSERT INTO checkpoints") {
				puts = append(puts, sql)
			}
		}
		tracer.mu.Unlock()
		if len(puts) != 1 || !strings.Contains(puts[0], "studio_fence") {
			t.Errorf("%s: the step sent %d statements of its own, want one with its fence check: %q", tc.name, len(puts), puts)
		}
		after := rowCounts(t, pool, thread)
		switch {
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: step = %v, want %v", tc.name, err, tc.want)
		case tc.want != nil && after != before:
			t.Errorf("%s: the refused step wrote rows: %v, before %v", tc.name, after, before)
		case tc.want == nil && err != nil:
			t.Errorf("%s: step = %v, want it saved", tc.name, err)
		case tc.want == nil && after != [3]int{before[0] + 1, before[1] + 1, before[2]}:
			t.Errorf("%s: rows %v after the step, before %v; want its checkpoint and its write", tc.name, after, before)
		case tc.want == nil:
			head = next
		}
	}
}

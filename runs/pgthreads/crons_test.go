package pgthreads_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

func at(min int) time.Time { return time.Date(2030, 1, 1, 0, min, 0, 0, time.UTC) }

func newCron(thread, schedule string, now time.Time) runs.Cron {
	return runs.Cron{ID: uuid.NewString(), Assistant: uuid.NewString(), Thread: thread, Schedule: schedule, Enabled: true,
		Payload: map[string]any{"input": map[string]any{"n": 1}}, Metadata: map[string]any{"k": "v"},
		NextRun: runs.NextRun(schedule, nil, now), Created: now, Updated: now}
}

// TestCronStores: both stores keep, patch, list, count and delete crons
// alike, and Due hands each due time to one caller of many at once.
func TestCronStores(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]func(t *testing.T) runs.CronStore{
		"memory":   func(*testing.T) runs.CronStore { return runs.NewMemoryCrons() },
		"postgres": func(t *testing.T) runs.CronStore { return pgthreads.NewCrons(pgtest.Schema(t, nil)) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := store(t)
			now := at(0).Add(30 * time.Second)
			thread := uuid.NewString()
			every := newCron(thread, "* * * * *", now)
			fives := newCron("", "*/5 * * * *", now)
			off := newCron(thread, "* * * * *", now)
			off.Enabled = false
			for _, c := range []runs.Cron{every, fives, off} {
				got, err := s.CreateCron(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				if got.OnRunCompleted != "delete" || got.Payload["input"] == nil || got.Metadata["k"] != "v" || !got.Created.Equal(runs.Stamp(now)) {
					t.Errorf("created %+v", got)
				}
			}
			if n, _ := s.CountCrons(ctx, runs.CronQuery{Thread: thread}); n != 2 {
				t.Errorf("count by thread = %d, want 2", n)
			}
			yes := true
			if n, _ := s.CountCrons(ctx, runs.CronQuery{Thread: thread, Enabled: &yes}); n != 1 {
				t.Errorf("count enabled of the thread = %d, want 1", n)
			}
			list, err := s.SearchCrons(ctx, runs.CronQuery{SortBy: runs.CronByNextRun, Desc: true, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].ID != fives.ID {
				t.Errorf("newest next run first: %v", list)
			}

			// Eight callers at once at 00:05: each due cron is taken once.
			var mu sync.Mutex
			taken := map[string]int{}
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fs, err := s.Due(ctx, at(5))
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					for _, f := range fs {
						taken[fmt.Sprintf("%s@%s", f.Cron.ID, f.At.Format(time.TimeOnly))]++
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			want := map[string]int{every.ID + "@00:01:00": 1, fives.ID + "@00:05:00": 1}
			if fmt.Sprint(taken) != fmt.Sprint(want) {
				t.Errorf("taken %v, want %v", taken, want)
			}
			got, err := s.GetCron(ctx, every.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.NextRun == nil || !got.NextRun.Equal(at(6)) {
				t.Errorf("next run after 00:05 is %v, want 00:06", got.NextRun)
			}

			// An end time before the next run: never again.
			end := at(5).Add(30 * time.Second)
			got, err = s.UpdateCron(ctx, every.ID, runs.CronPatch{EndTime: &end, Metadata: map[string]any{"x": 1}}, at(5))
			if err != nil {
				t.Fatal(err)
			}
			if got.NextRun != nil || got.Metadata["k"] != "v" || fmt.Sprint(got.Metadata["x"]) != "1" || !got.Updated.Equal(at(5)) {
				t.Errorf("patched %+v", got)
			}
			if fs, _ := s.Due(ctx, at(30)); len(fs) != 1 || fs[0].Cron.ID != fives.ID {
				t.Errorf("due at 00:30: %v, want the five-minute cron only", fs)
			}
			// Enabling recomputes from now.
			on := true
			if got, _ = s.UpdateCron(ctx, off.ID, runs.CronPatch{Enabled: &on}, at(40)); got.NextRun == nil || !got.NextRun.Equal(at(41)) {
				t.Errorf("enabled at 00:40: next run %v, want 00:41", got.NextRun)
			}

			if n, err := s.DeleteThreadCrons(ctx, thread); err != nil || n != 2 {
				t.Errorf("delete the thread's crons = %d, %v; want 2", n, err)
			}
			if err := s.DeleteCron(ctx, fives.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.DeleteCron(ctx, fives.ID); !errors.Is(err, runs.ErrUnknownCron) {
				t.Errorf("delete twice: %v, want ErrUnknownCron", err)
			}
			if _, err := s.GetCron(ctx, every.ID); !errors.Is(err, runs.ErrUnknownCron) {
				t.Errorf("get a deleted cron: %v", err)
			}
		})
	}
}

// TestDeletingAThreadRowDeletesItsCrons: the migration's trigger, so a
// thread deleted by any process or page takes its crons along.
func TestDeletingAThreadRowDeletesItsCrons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgthreads.NewCrons(pool)
	thread, other := uuid.NewString(), uuid.NewString()
	for _, th := range []string{thread, other} {
		if err := pgthreads.New(pool).SaveThread(ctx, runs.ThreadRecord{ID: th, Status: runs.StatusIdle, Updated: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateCron(ctx, newCron(th, "@daily", at(0))); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgthreads.New(pool).DeleteThread(ctx, thread); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.CountCrons(ctx, runs.CronQuery{Thread: thread}); n != 0 {
		t.Errorf("%d crons of the deleted thread left", n)
	}
	if n, _ := s.CountCrons(ctx, runs.CronQuery{}); n != 1 {
		t.Errorf("%d crons in all, want the other thread's one", n)
	}
}

// TestDueWaitsForAnotherTakingTheSameCrons: a caller taking due crons
// while another's transaction holds them (its jobs not yet inserted)
// waits for it, then finds them moved on: a due time is never taken
// twice, whatever the timing.
func TestDueWaitsForAnotherTakingTheSameCrons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgthreads.NewCrons(pool)
	for range 3 {
		if _, err := s.CreateCron(ctx, newCron("", "* * * * *", at(0))); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first, err := pgthreads.DueTx(ctx, tx, at(1))
	if err != nil || len(first) != 3 {
		t.Fatalf("the first caller took %d (%v), want 3", len(first), err)
	}
	var xid string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	second := make(chan []runs.CronFiring, 1)
	go func() {
		fs, err := s.Due(ctx, at(1))
		if err != nil {
			t.Error(err)
		}
		second <- fs
	}()
	// The second caller has reached the rows and waits on the first.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted AND transactionid::text = $1`,
			xid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second caller never waited for the first")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if fs := <-second; len(fs) != 0 {
		t.Errorf("the second caller also took %d", len(fs))
	}
}

package pgthreads_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
)

// The registry rides out a dropped connection and a server that refuses
// reconnections for a while: saves and reads retry instead of failing, so
// a run's end is not lost to a database restart.
func TestRegistryOutlivesConnectionFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := pgtest.NewProxy(t)
	s := pgthreads.New(pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial}))
	rec := runs.ThreadRecord{ID: "th", Graph: "g", Status: runs.StatusRunning, RunID: "r1", Updated: time.Now()}
	if err := s.SaveThread(ctx, rec); err != nil {
		t.Fatal(err)
	}
	proxy.Refuse(5)
	proxy.Cut()
	rec.Status, rec.Updated = runs.StatusIdle, time.Now()
	if err := s.SaveThread(ctx, rec); err != nil {
		t.Fatalf("save across the fault: %v", err)
	}
	proxy.Refuse(3)
	proxy.Cut()
	got, err := s.GetThread(ctx, "th")
	if err != nil || got.Status != runs.StatusIdle {
		t.Fatalf("read across the fault: %+v, %v", got, err)
	}
	proxy.Refuse(3)
	proxy.Cut()
	if ts, err := s.ListThreads(ctx, runs.ThreadFilter{}); err != nil || len(ts) != 1 {
		t.Fatalf("list across the fault: %+v, %v", ts, err)
	}
	proxy.Refuse(3)
	proxy.Cut()
	if n, err := s.CountThreads(ctx, runs.ThreadFilter{Status: runs.StatusIdle}); err != nil || n != 1 {
		t.Fatalf("count across the fault: %d, %v", n, err)
	}
	proxy.Refuse(3)
	proxy.Cut()
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatalf("delete across the fault: %v", err)
	}
	if _, err := s.GetThread(ctx, "th"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("after the delete: %v", err)
	}
	if _, refused := proxy.Counts(); refused < 17 {
		t.Fatalf("the proxy refused %d connections; the faults were not exercised", refused)
	}
	// With retries off the same fault is an error at once.
	off := pgthreads.New(pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial}), pgthreads.WithRetryWindow(-1))
	proxy.Refuse(-1)
	proxy.Cut()
	if err := off.SaveThread(ctx, rec); err == nil {
		t.Fatal("a save with its database gone and no retry succeeded")
	}
	proxy.Accept()
}

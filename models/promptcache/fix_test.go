package promptcache

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/store"
)

// TestRecordOrderLiveAndReloaded: records that finish out of start order
// are held in memory in the order a restarted process reads them back,
// so both pick the same previous call and show the same list.
func TestRecordOrderLiveAndReloaded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := live.thread(ctx, "t-order")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	// Completion order: the long call started first finishes last; two
	// calls started at the same instant finish in reverse id order.
	done := []*Record{
		{CallID: "c", StartedAt: t0.Add(time.Second)},
		{CallID: "e", StartedAt: t0.Add(2 * time.Second)},
		{CallID: "d", StartedAt: t0.Add(2 * time.Second)},
		{CallID: "a", StartedAt: t0},
	}
	for _, r := range done {
		r.ThreadID, r.LineageKey = "t-order", "|agent"
		ts.add(r)
		if err := live.saveRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	reloaded, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	rts, err := reloaded.thread(ctx, "t-order")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(l []*Record) []string {
		var out []string
		for _, r := range l {
			out = append(out, r.CallID)
		}
		return out
	}
	got, want := ids(ts.byLineage["|agent"]), ids(rts.byLineage["|agent"])
	if !slices.Equal(got, want) || !slices.Equal(want, []string{"a", "c", "d", "e"}) {
		t.Errorf("live order %v, reloaded order %v; want both [a c d e]", got, want)
	}
	recs, err := reloaded.Records(ctx, "t-order")
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, r := range recs {
		shown = append(shown, r.CallID)
	}
	if !slices.Equal(shown, got) {
		t.Errorf("Records %v, in memory %v", shown, got)
	}
}

// failingStore fails every write while fail is set.
type failingStore struct {
	store.Store
	fail atomic.Bool
}

func (s *failingStore) Batch(ctx context.Context, ops []store.Op) ([]store.Result, error) {
	if s.fail.Load() {
		for _, op := range ops {
			if _, ok := op.(store.PutOp); ok {
				return nil, errors.New("store down")
			}
		}
	}
	return s.Store.Batch(ctx, ops)
}

// TestLatchesRolledBackOnFailedSave: a latch whose save fails is not in
// force in memory either; the next call, with the store back, chooses
// afresh and what it chose is what a restarted process reads.
func TestLatchesRolledBackOnFailedSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem, err := store.NewMemory(store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &failingStore{Store: mem}
	c, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := c.thread(ctx, "t-latch")
	if err != nil {
		t.Fatal(err)
	}
	st.fail.Store(true)
	ts.mu.Lock()
	ts.latches.TTL = TTL1h
	ts.latches.Betas = []string{"beta-a"}
	ts.latches.Tools = map[string]string{"anthropic/x": "{}"}
	err = c.saveLatches(ctx, ts)
	got := ts.latches
	ts.mu.Unlock()
	if err == nil {
		t.Fatal("the failed save reported no error")
	}
	if got.TTL != "" || len(got.Betas) != 0 || len(got.Tools) != 0 {
		t.Errorf("after a failed save memory holds %+v; want the stored (empty) latches", got)
	}

	st.fail.Store(false)
	ts.mu.Lock()
	ts.latches.TTL = TTL5m
	err = c.saveLatches(ctx, ts)
	ts.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	// A failure after a successful save goes back to that save, not to
	// the empty latches.
	st.fail.Store(true)
	ts.mu.Lock()
	ts.latches.TTL = TTL1h
	_ = c.saveLatches(ctx, ts)
	got = ts.latches
	ts.mu.Unlock()
	if got.TTL != TTL5m {
		t.Errorf("TTL %q after a failed save; want the saved 5m", got.TTL)
	}
	st.fail.Store(false)
	restarted, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	rts, err := restarted.thread(ctx, "t-latch")
	if err != nil {
		t.Fatal(err)
	}
	if rts.latches.TTL != got.TTL {
		t.Errorf("restarted TTL %q, live %q", rts.latches.TTL, got.TTL)
	}
}

package flakyservice_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/flakyservice"
)

// fastRetry is the test policy: the real schedule's shape, 1ms steps, no
// jitter so the waits are exact.
func fastRetry(maxAttempts int) *engine.RetryPolicy {
	return &engine.RetryPolicy{InitialInterval: time.Millisecond, BackoffFactor: 2, MaxAttempts: maxAttempts}
}

type events struct {
	mu       sync.Mutex
	started  []int // attempts of fetch_invoice
	retried  []engine.TaskRetried
	finished []engine.TaskFinished
	failed   []engine.TaskFailed
}

func (e *events) listen(ev engine.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch x := ev.(type) {
	case engine.TaskStarted:
		if x.Task.Name == flakyservice.NodeFetchInvoice {
			e.started = append(e.started, x.Attempt)
		}
	case engine.TaskRetried:
		e.retried = append(e.retried, x)
	case engine.TaskFinished:
		if x.Task.Name == flakyservice.NodeFetchInvoice {
			e.finished = append(e.finished, x)
		}
	case engine.TaskFailed:
		e.failed = append(e.failed, x)
	}
}

func TestTransientFailuresAreRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	api := flakyservice.NewFlakyAPI(2)
	g, err := flakyservice.New(flakyservice.Options{API: api, Retry: fastRetry(4)})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	out, err := g.Invoke(context.Background(), flakyservice.Input("in_1002"), &engine.RunOptions{Listener: ev.listen})
	if err != nil {
		t.Fatalf("run failed: %v", err)
	}
	if out.Attempts != 3 || out.Status != "outstanding" || out.Invoice.Customer != "Globex Ltd" {
		t.Fatalf("result = %+v, want the invoice fetched on attempt 3", out)
	}
	if n := api.Calls("in_1002"); n != 3 {
		t.Fatalf("provider called %d times, want 3", n)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if want := []int{1, 2, 3}; !reflect.DeepEqual(ev.started, want) {
		t.Fatalf("TaskStarted attempts %v, want %v", ev.started, want)
	}
	wantWaits := []time.Duration{time.Millisecond, 2 * time.Millisecond}
	if len(ev.retried) != len(wantWaits) {
		t.Fatalf("%d TaskRetried events, want %d", len(ev.retried), len(wantWaits))
	}
	for i, r := range ev.retried {
		var se *flakyservice.StatusError
		if r.Attempt != i+1 || r.Backoff != wantWaits[i] || !errors.As(r.Err, &se) || se.Code != 503 {
			t.Errorf("retry %d: attempt %d, backoff %v, err %v; want attempt %d, backoff %v, a 503", i, r.Attempt, r.Backoff, r.Err, i+1, wantWaits[i])
		}
	}
	if len(ev.finished) != 1 || ev.finished[0].Attempts != 3 {
		t.Fatalf("TaskFinished = %+v, want one with Attempts 3", ev.finished)
	}
	if len(ev.failed) != 0 {
		t.Fatalf("TaskFailed events %+v in a run that recovered", ev.failed)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	api := flakyservice.NewFlakyAPI(10)
	g, err := flakyservice.New(flakyservice.Options{API: api, Retry: fastRetry(3)})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	_, err = g.Invoke(context.Background(), flakyservice.Input("in_1001"), &engine.RunOptions{Listener: ev.listen})
	var se *flakyservice.StatusError
	if !errors.As(err, &se) || se.Code != 503 {
		t.Fatalf("error = %v, want the last 503", err)
	}
	if n := api.Calls("in_1001"); n != 3 {
		t.Fatalf("provider called %d times, want 3 (MaxAttempts)", n)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.retried) != 2 || len(ev.failed) != 1 || ev.failed[0].Attempts != 3 {
		t.Fatalf("retried %d times, failed %+v; want 2 retries and one failure after 3 attempts", len(ev.retried), ev.failed)
	}
}

func TestPermanentErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	api := flakyservice.NewFlakyAPI(0)
	g, err := flakyservice.New(flakyservice.Options{API: api, Retry: fastRetry(5)})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	_, err = g.Invoke(context.Background(), flakyservice.Input("in_9999"), &engine.RunOptions{Listener: ev.listen})
	if !errors.Is(err, flakyservice.ErrInvoiceNotFound) || !engine.IsPermanent(err) {
		t.Fatalf("error = %v, want a permanent ErrInvoiceNotFound", err)
	}
	if n := api.Calls("in_9999"); n != 1 {
		t.Fatalf("provider called %d times for a missing invoice, want 1", n)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if len(ev.retried) != 0 {
		t.Fatalf("a permanent error was retried: %+v", ev.retried)
	}
	if len(ev.failed) != 1 || ev.failed[0].Attempts != 1 {
		t.Fatalf("TaskFailed = %+v, want one failure after 1 attempt", ev.failed)
	}
}

// The retry happens inside one superstep: the checkpointed history has no
// trace of the failed attempts, only the result.
func TestCheckpointedRetriedRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, err := flakyservice.New(flakyservice.Options{Retry: fastRetry(4), Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(ctx, flakyservice.Input("in_1001"), &engine.RunOptions{ThreadID: "recon"}); err != nil {
		t.Fatal(err)
	}
	snap, err := g.GetState(ctx, checkpoints.Config{ThreadID: "recon"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Values["status"] != "settled" || snap.Values["attempts"] != 3 {
		t.Fatalf("checkpointed state %v, want settled on attempt 3", snap.Values)
	}
}

// The default policy is what a deployment gets; the Studio draws the node
// as retried.
func TestDefaultPolicyIsDeclared(t *testing.T) {
	t.Parallel()
	g, err := flakyservice.New(flakyservice.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Topology().Nodes {
		if n.Name == flakyservice.NodeFetchInvoice {
			if !n.Retried {
				t.Fatal("fetch_invoice is not marked as retried in the topology")
			}
			return
		}
	}
	t.Fatal("fetch_invoice is missing from the topology")
}

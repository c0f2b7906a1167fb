package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/server"
)

// TestStrategiesWithOnlyAQueuedRunLeaveTheFinishedRunAlone: a thread
// busy only with a delayed run; interrupt and rollback cancel that run
// and start the new one, and the last finished run, with its checkpoints,
// stays.
func TestStrategiesWithOnlyAQueuedRunLeaveTheFinishedRunAlone(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		for _, strategy := range []string{"interrupt", "rollback"} {
			t.Run(strategy, func(t *testing.T) {
				t.Parallel()
				c := newServer(nil)
				thread := uuid.NewString()
				c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"done"}}, "if_not_exists": "create"}, 200)
				delayed := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"later"}}, "after_seconds": 600}, 200)
				next := c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"now"}}, "multitask_strategy": strategy}, 200)
				if got := fmt.Sprint(next["log"]); got != "[done a b c now a b c]" {
					t.Fatalf("after %s the log is %s: the finished run must stay, the delayed one never run", strategy, got)
				}
				got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s", thread, delayed["run_id"]), nil, 200)
				if got["status"] != "interrupted" {
					t.Fatalf("the delayed run is %v, want interrupted", got["status"])
				}
				if runs := c.list("GET", "/threads/"+thread+"/runs", nil, 200); len(runs) != 3 {
					t.Fatalf("the thread lists %d runs, want 3 (finished, cancelled, new)", len(runs))
				}
			})
		}
	})
}

// TestDeletedThreadStaysDeletedWithRunsQueued: deleting a thread cancels
// its queued runs; none brings it back.
func TestDeletedThreadStaysDeletedWithRunsQueued(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
		<-g.entered
		queued := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}}, 200)
		if queued["status"] != "pending" {
			t.Fatalf("second run %v, want pending", queued["status"])
		}
		done := make(chan int)
		go func() {
			code, _, _ := c.do("DELETE", "/threads/"+thread, nil)
			done <- code
		}()
		// The delete cancels the active run, which waits in b until released
		// or cancelled.
		if code := <-done; code != 204 {
			t.Fatalf("delete = %d", code)
		}
		close(g.release)
		if code, _, b := c.do("GET", "/threads/"+thread, nil); code != 404 {
			t.Fatalf("the deleted thread: GET = %d %s, want 404", code, b)
		}
		if code, _, b := c.do("POST", "/threads/search", map[string]any{"ids": []string{thread}}); code != 200 || strings.TrimSpace(string(b)) != "[]" {
			t.Fatalf("search for the deleted thread = %d %s, want none", code, b)
		}
	})
}

// TestStatelessWebhookGetsTheRunBeforeItsThreadGoes: a stateless run's
// webhook carries the run and its values, though its thread is deleted
// once it ends.
func TestStatelessWebhookGetsTheRunBeforeItsThreadGoes(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 3)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		got <- m
	}))
	t.Cleanup(hook.Close)
	c := newServerWith(t, nil, func(cfg *server.Config) { cfg.WebhookHosts = []string{"127.0.0.1"} })
	for range 3 {
		run := c.json("POST", "/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "webhook": hook.URL}, 200)
		m := <-got
		if m["run_id"] != run["run_id"] || m["status"] != "success" || fmt.Sprint(m["values"]) != "map[log:[a b c]]" {
			t.Fatalf("stateless webhook payload %v", m)
		}
	}
}

// TestDroppedStreamCancelsItsQueuedRun: on_disconnect cancel applies to
// a run still waiting in its thread's queue.
func TestDroppedStreamCancelsItsQueuedRun(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		first := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
		<-g.entered
		ctx, cancel := context.WithCancel(context.Background())
		b, _ := json.Marshal(map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"dropped"}}, "on_disconnect": "cancel"})
		req, _ := http.NewRequestWithContext(ctx, "POST", c.base+"/threads/"+thread+"/runs/stream", strings.NewReader(string(b)))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		runID := strings.TrimPrefix(res.Header.Get("Content-Location"), "/threads/"+thread+"/runs/")
		cancel()
		res.Body.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := c.json("GET", "/threads/"+thread+"/runs/"+runID, nil, 200)
			if got["status"] == "interrupted" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the dropped stream's queued run is %v, want interrupted", got["status"])
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(g.release)
		joined := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, first["run_id"]), nil, 200)
		if fmt.Sprint(joined["log"]) != "[a b c]" {
			t.Fatalf("the log %v: the dropped run must never run", joined["log"])
		}
	})
}

// TestQueuedRunsAreCheckedWhenCreated: a delayed or enqueued run with
// input the graph refuses is a 422 at once, and nothing is queued.
func TestQueuedRunsAreCheckedWhenCreated(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
		<-g.entered
		for _, body := range []map[string]any{
			{"assistant_id": "linear", "input": map[string]any{"nope": 1}},
			{"assistant_id": "linear", "input": map[string]any{"answer": 5}, "after_seconds": 60},
		} {
			if code, _, b := c.do("POST", "/threads/"+thread+"/runs", body); code != 422 {
				t.Errorf("queued run %v = %d %s, want 422", body, code, b)
			}
		}
		close(g.release)
		if runs := c.list("GET", "/threads/"+thread+"/runs", nil, 200); len(runs) != 1 {
			t.Fatalf("the thread lists %d runs, want only the first", len(runs))
		}
	})
}

// TestRollbackHoldsTheQueueUntilTheRunIsGone: a run rolled back while
// another waits behind it: the queued run starts only once the rolled
// back run's checkpoints are deleted, so nothing of it leaks into the
// next run.
func TestRollbackHoldsTheQueueUntilTheRunIsGone(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		go func() { <-g.entered; g.release <- struct{}{} }()
		c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"kept"}}, "if_not_exists": "create"}, 200)
		x := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"X"}}}, 200)
		<-g.entered
		y := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"Y"}}}, 200)
		if code, _, b := c.do("POST", fmt.Sprintf("/threads/%s/runs/%s/cancel?action=rollback&wait=1", thread, x["run_id"]), nil); code != 204 {
			t.Fatalf("rollback = %d %s", code, b)
		}
		<-g.entered
		close(g.release)
		got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, y["run_id"]), nil, 200)
		if fmt.Sprint(got["log"]) != "[kept a b c Y a b c]" {
			t.Fatalf("after rolling X back, Y ran to %v: X's work must be gone", got["log"])
		}
		hist := c.list("POST", "/threads/"+thread+"/history", map[string]any{"limit": 100}, 200)
		ids := map[string]bool{}
		for _, h := range hist {
			ids[cpID(h, "checkpoint")] = true
		}
		for _, h := range hist {
			if p := cpID(h, "parent_checkpoint"); p != "" && !ids[p] {
				t.Fatalf("checkpoint %s has parent %s, which is gone", cpID(h, "checkpoint"), p)
			}
		}
	})
}

// TestJoinOfAnEndedRunDoesNotWaitForTheNext: joining a run that ended
// answers at once, though a later run of the thread goes on.
func TestJoinOfAnEndedRunDoesNotWaitForTheNext(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, newServer func(*gate) *client) {
		g := newGate()
		c := newServer(g)
		thread := uuid.NewString()
		go func() { <-g.entered; g.release <- struct{}{} }()
		first := c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create"}, 200)
		_ = first
		runs := c.list("GET", "/threads/"+thread+"/runs", nil, 200)
		c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}}, 200)
		<-g.entered // the second run holds in b
		got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s/join", thread, runs[0]["run_id"]), nil, 200)
		if got["log"] == nil {
			t.Fatalf("join of the ended run answered %v", got)
		}
		close(g.release)
	})
}

package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestStatelessRunsLeaveNoThreadBehind(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	code, h, b := c.do("POST", "/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"s"}}})
	if code != 200 || strings.TrimSpace(string(b)) != `{"log":["s","a","b","c"]}` || !strings.HasPrefix(h.Get("Content-Location"), "/runs/") {
		t.Fatalf("stateless wait = %d %v %s", code, h.Get("Content-Location"), b)
	}
	_, evs := c.stream("/runs/stream", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "stream_mode": "updates"})
	if got := strings.Join(names(evs), ","); got != "metadata,updates,updates,updates" {
		t.Fatalf("stateless stream events %s", got)
	}
	kept := c.json("POST", "/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "on_completion": "keep"}, 200)
	// The kept run's thread outlives it; the others' threads were
	// deleted once their runs ended.
	deadline := time.Now().Add(10 * time.Second)
	for {
		all := c.list("POST", "/threads/search", map[string]any{}, 200)
		if len(all) == 1 && all[0]["thread_id"] == kept["thread_id"] && all[0]["status"] == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads after three stateless runs: %v; want only the kept one, idle", all)
		}
		time.Sleep(20 * time.Millisecond)
	}
	batch := c.list("POST", "/runs/batch", []any{
		map[string]any{"assistant_id": "linear", "input": map[string]any{}, "on_completion": "keep"},
		map[string]any{"assistant_id": "approval", "input": map[string]any{}, "on_completion": "keep"},
	}, 200)
	if len(batch) != 2 || batch[0]["run_id"] == nil || batch[1]["thread_id"] == batch[0]["thread_id"] {
		t.Fatalf("batch answered %v: want two runs on two threads", batch)
	}
	code, _, b = c.do("POST", "/runs/batch", []any{map[string]any{"assistant_id": "linear", "input": map[string]any{}}, map[string]any{"assistant_id": "linear", "stream_mode": "nope"}})
	if code != 422 || !strings.Contains(string(b), "[1]") {
		t.Fatalf("a batch with a bad request = %d %s, want 422 naming [1]", code, b)
	}
	code, _, b = c.do("POST", "/runs/wait", map[string]any{"assistant_id": "linear"})
	if code != 422 || !strings.Contains(string(b), "input") {
		t.Fatalf("a stateless run without input = %d %s, want 422", code, b)
	}
	_ = fmt.Sprint
}

func TestCancelManyByStatus(t *testing.T) {
	t.Parallel()
	g := newGate()
	c := newServer(t, g)
	run := c.json("POST", "/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "on_completion": "keep"}, 200)
	<-g.entered
	if code, _, b := c.do("POST", "/runs/cancel", map[string]any{"status": "running"}); code != 204 {
		t.Fatalf("cancel running = %d %s", code, b)
	}
	got := c.json("GET", fmt.Sprintf("/threads/%s/runs/%s", run["thread_id"], run["run_id"]), nil, 200)
	if got["status"] != "interrupted" {
		t.Fatalf("the cancelled run is %v, want interrupted", got["status"])
	}
}

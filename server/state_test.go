package server_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
)

func (c *client) list(method, path string, body any, want int) []map[string]any {
	c.t.Helper()
	code, _, b := c.do(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s %s: body %q is not a JSON array: %v", method, path, b, err)
	}
	return out
}

func cpID(m map[string]any, key string) string {
	c, _ := m[key].(map[string]any)
	id, _ := c["checkpoint_id"].(string)
	return id
}

func TestStateHistoryAndUpdateStateForks(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	thread := uuid.NewString()
	c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"go"}}, "if_not_exists": "create"}, 200)
	head := c.json("GET", "/threads/"+thread+"/state", nil, 200)
	if fmt.Sprint(head["values"]) != "map[log:[go a b c]]" || fmt.Sprint(head["next"]) != "[]" {
		t.Fatalf("head state %v", head)
	}
	hist := c.list("POST", "/threads/"+thread+"/history", map[string]any{"limit": 10}, 200)
	// input, a, b, c: the checkpoints of one run, newest first.
	if len(hist) != 5 || cpID(hist[0], "checkpoint") != cpID(head, "checkpoint") {
		t.Fatalf("history has %d states, newest %v; want 5, newest the head", len(hist), hist[0]["checkpoint"])
	}
	for i := 0; i+1 < len(hist); i++ {
		if cpID(hist[i], "parent_checkpoint") != cpID(hist[i+1], "checkpoint") {
			t.Fatalf("state %d's parent is %s, want the next older %s", i, cpID(hist[i], "parent_checkpoint"), cpID(hist[i+1], "checkpoint"))
		}
	}
	// Every shape of "before" pages the same way.
	second := cpID(hist[1], "checkpoint")
	for _, before := range []any{cpID(hist[0], "checkpoint"),
		map[string]any{"checkpoint_id": cpID(hist[0], "checkpoint"), "checkpoint_ns": ""},
		map[string]any{"configurable": map[string]any{"checkpoint_id": cpID(hist[0], "checkpoint")}}} {
		page := c.list("POST", "/threads/"+thread+"/history", map[string]any{"limit": 1, "before": before}, 200)
		if len(page) != 1 || cpID(page[0], "checkpoint") != second {
			t.Fatalf("history before %v = %v, want the second newest", before, page)
		}
	}
	// The state at an older checkpoint, by id and by object.
	afterA := cpID(hist[2], "checkpoint")
	at := c.json("GET", "/threads/"+thread+"/state/"+afterA, nil, 200)
	at2 := c.json("POST", "/threads/"+thread+"/state/checkpoint", map[string]any{"checkpoint": map[string]any{"checkpoint_id": afterA, "checkpoint_ns": ""}}, 200)
	if fmt.Sprint(at["values"]) != "map[log:[go a]]" || fmt.Sprint(at["next"]) != "[b]" || fmt.Sprint(at2["values"]) != fmt.Sprint(at["values"]) {
		t.Fatalf("state after a: %v / %v", at, at2)
	}
	// Update as node a at that checkpoint: a branch whose next is b.
	upd := c.json("POST", "/threads/"+thread+"/state", map[string]any{"values": map[string]any{"log": []string{"edited"}}, "as_node": "a", "checkpoint_id": afterA}, 200)
	forked := c.json("GET", "/threads/"+thread+"/state/"+cpID(upd, "checkpoint"), nil, 200)
	if cpID(forked, "parent_checkpoint") != afterA || fmt.Sprint(forked["values"]) != "map[log:[go a edited]]" || fmt.Sprint(forked["next"]) != "[b]" {
		t.Fatalf("the edit made %v", forked)
	}
	// Re-run from here: a copy is a sibling of the copied checkpoint.
	cp := c.json("POST", "/threads/"+thread+"/state", map[string]any{"values": nil, "as_node": "__copy__", "checkpoint_id": afterA}, 200)
	copied := c.json("GET", "/threads/"+thread+"/state/"+cpID(cp, "checkpoint"), nil, 200)
	md, _ := copied["metadata"].(map[string]any)
	if cpID(copied, "parent_checkpoint") != cpID(hist[3], "checkpoint") || md["source"] != "fork" {
		t.Fatalf("the copy is %v, want a fork whose parent is the copied checkpoint's parent", copied)
	}
	// A run with input null continues from the copy (the head now).
	got := c.json("POST", "/threads/"+thread+"/runs/wait", map[string]any{"assistant_id": "linear", "input": nil}, 200)
	if fmt.Sprint(got["log"]) != "[go a b c]" {
		t.Fatalf("continuing from the copy gave %v", got)
	}
	// Bad input.
	for _, tc := range []struct {
		path string
		body any
		code int
	}{
		{"/threads/" + thread + "/state", map[string]any{"values": map[string]any{"nope": 1}, "as_node": "a"}, 422},
		{"/threads/" + thread + "/state", map[string]any{"values": map[string]any{"log": []string{"x"}}, "as_node": "zzz"}, 422},
		{"/threads/" + thread + "/history", map[string]any{"limit": 0}, 422},
		{"/threads/" + uuid.NewString() + "/history", map[string]any{}, 404},
	} {
		if code, _, b := c.do("POST", tc.path, tc.body); code != tc.code {
			t.Errorf("POST %s %v = %d %s, want %d", tc.path, tc.body, code, b, tc.code)
		}
	}
	if code, _, b := c.do("GET", "/threads/"+thread+"/state/"+uuid.NewString(), nil); code != 404 {
		t.Errorf("state at an unknown checkpoint = %d %s, want 404", code, b)
	}
}

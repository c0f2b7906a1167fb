package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestThreadsCreateGetPatchSearchCountCopyDelete(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	id := uuid.NewString()
	th := c.json("POST", "/threads", map[string]any{"thread_id": id, "metadata": map[string]any{"user": "ana", "n": 1}}, 200)
	if th["thread_id"] != id || th["status"] != "idle" || fmt.Sprint(th["values"]) != "map[]" || th["created_at"] == nil {
		t.Fatalf("new thread %v", th)
	}
	if code, _, b := c.do("POST", "/threads", map[string]any{"thread_id": id}); code != 409 {
		t.Fatalf("creating it again = %d %s, want 409", code, b)
	}
	again := c.json("POST", "/threads", map[string]any{"thread_id": id, "if_exists": "do_nothing", "metadata": map[string]any{"user": "bob"}}, 200)
	if md, _ := again["metadata"].(map[string]any); md["user"] != "ana" {
		t.Fatalf("do_nothing changed the thread: %v", again)
	}
	// Its first run binds its graph; its values and status follow.
	c.json("POST", "/threads/"+id+"/runs/wait", map[string]any{"assistant_id": "approval", "input": map[string]any{}}, 200)
	got := c.json("GET", "/threads/"+id, nil, 200)
	ints, _ := got["interrupts"].(map[string]any)
	if got["status"] != "interrupted" || len(ints) != 1 {
		t.Fatalf("thread at an interrupt %v: want interrupted with one task's interrupts", got)
	}
	patched := c.json("PATCH", "/threads/"+id, map[string]any{"metadata": map[string]any{"team": "red"}}, 200)
	if md, _ := patched["metadata"].(map[string]any); md["user"] != "ana" || md["team"] != "red" {
		t.Fatalf("patch merges metadata: %v", patched["metadata"])
	}
	other := c.json("POST", "/threads", map[string]any{"metadata": map[string]any{"user": "bob"}}, 200)
	found := c.list("POST", "/threads/search", map[string]any{"metadata": map[string]any{"user": "ana"}}, 200)
	if len(found) != 1 || found[0]["thread_id"] != id {
		t.Fatalf("search by metadata found %v", found)
	}
	if found := c.list("POST", "/threads/search", map[string]any{"status": "interrupted"}, 200); len(found) != 1 {
		t.Fatalf("search by status found %d", len(found))
	}
	// Values are matched as containment: the waiting thread's log holds
	// the empty list; no thread has an answer yet.
	if byValues := c.list("POST", "/threads/search", map[string]any{"values": map[string]any{"log": []string{}}}, 200); len(byValues) != 1 || byValues[0]["thread_id"] != id {
		t.Fatalf("search by values found %v", byValues)
	}
	if byValues := c.list("POST", "/threads/search", map[string]any{"values": map[string]any{"answer": "yes"}}, 200); len(byValues) != 0 {
		t.Fatalf("search by a value no thread has found %v", byValues)
	}
	code, h, b := c.do("POST", "/threads/search", map[string]any{"limit": 1})
	if code != 200 || h.Get("X-Pagination-Total") != "2" || h.Get("X-Pagination-Next") != "1" || !strings.Contains(string(b), other["thread_id"].(string)) {
		t.Fatalf("first page of one: %d %v %s; want the newest, total 2, next 1", code, h, b)
	}
	var n int
	code, _, b = c.do("POST", "/threads/count", map[string]any{"metadata": map[string]any{"user": "bob"}})
	if _, err := fmt.Sscan(string(b), &n); code != 200 || err != nil || n != 1 {
		t.Fatalf("count = %d %s, want 1", code, b)
	}
	cp := c.json("POST", "/threads/"+id+"/copy", nil, 200)
	if cp["thread_id"] == id || cp["status"] != "interrupted" || fmt.Sprint(cp["values"]) != fmt.Sprint(got["values"]) {
		t.Fatalf("copy %v: want a new id with the same state", cp)
	}
	// The copy resumes on its own.
	resumed := c.json("POST", fmt.Sprintf("/threads/%s/runs/wait", cp["thread_id"]), map[string]any{"assistant_id": "approval", "command": map[string]any{"resume": "ok"}}, 200)
	if resumed["answer"] != "ok" {
		t.Fatalf("resuming the copy answered %v", resumed)
	}
	if code, _, b := c.do("DELETE", "/threads/"+id, nil); code != 204 || len(b) != 0 {
		t.Fatalf("delete = %d %q, want 204 and no body", code, b)
	}
	for _, path := range []string{"/threads/" + id, "/threads/" + id + "/state"} {
		if code, _, _ := c.do("GET", path, nil); code != 404 {
			t.Fatalf("GET %s after delete = %d, want 404", path, code)
		}
	}
	for _, tc := range []struct {
		method, path string
		body         any
		field        string
	}{
		{"POST", "/threads", map[string]any{"thread_id": "a b"}, "thread_id"},
		{"POST", "/threads", map[string]any{"if_exists": "maybe"}, "if_exists"},
		{"POST", "/threads/search", map[string]any{"status": "busyish"}, "status"},
		{"POST", "/threads/search", map[string]any{"limit": 0}, "limit"},
		{"POST", "/threads/search", map[string]any{"sort_by": "name"}, "sort"},
		{"POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "linear"}, "supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{"nope": 1}, "as_node": "a"}}}}}, "supersteps"},
	} {
		code, _, b := c.do(tc.method, tc.path, tc.body)
		if code != 422 || !strings.Contains(string(b), tc.field) {
			t.Errorf("%s %s %v = %d %s, want 422 naming %s", tc.method, tc.path, tc.body, code, b, tc.field)
		}
	}
}

func TestThreadCreatedWithSuperstepsHasThatState(t *testing.T) {
	t.Parallel()
	c := newServer(t, nil)
	th := c.json("POST", "/threads", map[string]any{"metadata": map[string]any{"graph_id": "linear"},
		"supersteps": []any{map[string]any{"updates": []any{map[string]any{"values": map[string]any{"log": []string{"seeded"}}, "as_node": "a"}}}}}, 200)
	if fmt.Sprint(th["values"]) != "map[log:[seeded]]" {
		t.Fatalf("seeded thread %v", th)
	}
	st := c.json("GET", fmt.Sprintf("/threads/%s/state", th["thread_id"]), nil, 200)
	if fmt.Sprint(st["next"]) != "[b]" {
		t.Fatalf("after an update as a, next is %v, want [b]", st["next"])
	}
}

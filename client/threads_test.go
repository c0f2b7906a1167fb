package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/client"
)

func TestThreadStateHistoryAndUpdates(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	ctx := context.Background()
	thread := uuid.NewString()
	if _, err := c.Runs.Wait(ctx, thread, "linear", &client.RunCreate{Input: map[string]any{"log": []string{"go"}}, IfNotExists: "create"}); err != nil {
		t.Fatal(err)
	}
	head, err := c.Threads.GetState(ctx, thread, nil)
	if err != nil || fmt.Sprint(head.Values["log"]) != "[go a b c]" || len(head.Next) != 0 || head.Checkpoint == nil || head.ParentCheckpoint == nil {
		t.Fatalf("GetState = %+v, %v", head, err)
	}
	hist, err := c.Threads.GetHistory(ctx, thread, nil)
	if err != nil || len(hist) != 5 || hist[0].Checkpoint.CheckpointID != head.Checkpoint.CheckpointID {
		t.Fatalf("GetHistory = %d states, %v; want 5, newest the head", len(hist), err)
	}
	for i := 0; i+1 < len(hist); i++ {
		if hist[i].ParentCheckpoint.CheckpointID != hist[i+1].Checkpoint.CheckpointID {
			t.Fatalf("state %d's parent is not the next older state", i)
		}
	}
	page, err := c.Threads.GetHistory(ctx, thread, &client.HistoryOptions{Limit: 2, Before: hist[0].Checkpoint})
	if err != nil || len(page) != 2 || page[0].Checkpoint.CheckpointID != hist[1].Checkpoint.CheckpointID {
		t.Fatalf("GetHistory before the head = %+v, %v; want states 1 and 2", page, err)
	}
	inputs, err := c.Threads.GetHistory(ctx, thread, &client.HistoryOptions{Metadata: map[string]any{"source": "input"}})
	if err != nil || len(inputs) != 1 || inputs[0].Checkpoint.CheckpointID != hist[4].Checkpoint.CheckpointID {
		t.Fatalf("GetHistory of source input = %+v, %v; want the first checkpoint only", inputs, err)
	}
	// The state after a, by id and by checkpoint object.
	afterA := hist[2].Checkpoint
	at, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{CheckpointID: afterA.CheckpointID})
	if err != nil || fmt.Sprint(at.Values["log"]) != "[go a]" || fmt.Sprint(at.Next) != "[b]" {
		t.Fatalf("GetState at %s = %+v, %v", afterA.CheckpointID, at, err)
	}
	at2, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{Checkpoint: &client.Checkpoint{CheckpointID: afterA.CheckpointID}})
	if err != nil || fmt.Sprint(at2.Values) != fmt.Sprint(at.Values) || at2.Checkpoint.CheckpointID != afterA.CheckpointID {
		t.Fatalf("GetState at a checkpoint object = %+v, %v", at2, err)
	}
	if _, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{CheckpointID: uuid.NewString()}); statusOf(err) != 404 {
		t.Fatalf("GetState at an unknown checkpoint = %v, want 404", err)
	}
	// An edit as node a there forks a branch whose next is b.
	cp, err := c.Threads.UpdateState(ctx, thread, map[string]any{"log": []string{"edited"}}, &client.UpdateStateOptions{AsNode: "a", Checkpoint: afterA})
	if err != nil {
		t.Fatal(err)
	}
	forked, err := c.Threads.GetState(ctx, thread, nil)
	if err != nil || forked.Checkpoint.CheckpointID != cp.CheckpointID || forked.ParentCheckpoint.CheckpointID != afterA.CheckpointID ||
		fmt.Sprint(forked.Values["log"]) != "[go a edited]" || fmt.Sprint(forked.Next) != "[b]" {
		t.Fatalf("after the edit the state is %+v, %v", forked, err)
	}
	// Re-run from here: __copy__ with no values makes a sibling fork.
	cp, err = c.Threads.UpdateState(ctx, thread, nil, &client.UpdateStateOptions{AsNode: "__copy__", CheckpointID: afterA.CheckpointID})
	if err != nil {
		t.Fatal(err)
	}
	copied, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{CheckpointID: cp.CheckpointID})
	if err != nil || copied.Metadata["source"] != "fork" || copied.ParentCheckpoint.CheckpointID != hist[3].Checkpoint.CheckpointID {
		t.Fatalf("the copy is %+v, %v; want a fork beside the copied checkpoint", copied, err)
	}
	res, err := c.Runs.Wait(ctx, thread, "linear", nil)
	if err != nil || fmt.Sprint(res.Values["log"]) != "[go a b c]" {
		t.Fatalf("a run with no input continues the copy: %+v, %v", res, err)
	}
	if _, err := c.Threads.UpdateState(ctx, thread, map[string]any{"log": []string{"x"}}, &client.UpdateStateOptions{AsNode: "zzz"}); statusOf(err) != 422 {
		t.Fatalf("UpdateState as an unknown node = %v, want 422", err)
	}
	if _, err := c.Threads.GetHistory(ctx, uuid.NewString(), nil); statusOf(err) != 404 {
		t.Fatalf("GetHistory of an unknown thread = %v, want 404", err)
	}
}

// TestThreadStateWithSubgraphs stops inside a subgraph: its state comes
// with the parent's when asked for, and is named by a checkpoint else.
func TestThreadStateWithSubgraphs(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	ctx := context.Background()
	thread := uuid.NewString()
	res, err := c.Runs.Wait(ctx, thread, "nested", create())
	if err != nil || len(res.Interrupts) != 1 {
		t.Fatalf("Wait = %+v, %v; want the subgraph's interrupt", res, err)
	}
	plain, err := c.Threads.GetState(ctx, thread, nil)
	if err != nil || len(plain.Tasks) != 1 || plain.Tasks[0].Name != "sub" || plain.Tasks[0].State != nil || plain.Tasks[0].Checkpoint == nil {
		t.Fatalf("GetState = %+v, %v; want the sub task naming its checkpoint", plain, err)
	}
	deep, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{Subgraphs: true})
	if err != nil || len(deep.Tasks) != 1 || deep.Tasks[0].State == nil || fmt.Sprint(deep.Tasks[0].State.Next) != "[ask]" {
		t.Fatalf("GetState with subgraphs = %+v, %v; want the subgraph's state waiting at ask", deep, err)
	}
	// The same through a checkpoint object with subgraphs.
	obj, err := c.Threads.GetState(ctx, thread, &client.GetStateOptions{Checkpoint: plain.Checkpoint, Subgraphs: true})
	if err != nil || len(obj.Tasks) != 1 || obj.Tasks[0].State == nil {
		t.Fatalf("GetState at the checkpoint with subgraphs = %+v, %v", obj, err)
	}
	sub, err := c.Threads.GetHistory(ctx, thread, &client.HistoryOptions{Checkpoint: &client.Checkpoint{CheckpointNS: plain.Tasks[0].Checkpoint.CheckpointNS}})
	if err != nil || len(sub) == 0 || sub[0].Checkpoint.CheckpointNS != plain.Tasks[0].Checkpoint.CheckpointNS {
		t.Fatalf("the subgraph's history = %+v, %v", sub, err)
	}
}

// fakeCall is one request the threads' routes must get, and the answer.
type fakeCall struct {
	method, path, query, body string
	status                    int
	answer                    string
	header                    map[string]string
}

// fakeAPI answers calls in order and fails the test on any other
// request: the thread routes' shapes are the spec's (agent-api.md §2.2,
// §2.3) while the server's routes are written.
func fakeAPI(t *testing.T, calls []fakeCall) *client.Client {
	t.Helper()
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i >= len(calls) {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			w.WriteHeader(500)
			return
		}
		want := calls[i]
		i++
		b, _ := io.ReadAll(r.Body)
		if r.Method != want.method || r.URL.Path != want.path || r.URL.RawQuery != want.query {
			t.Errorf("call %d: %s %s?%s, want %s %s?%s", i, r.Method, r.URL.Path, r.URL.RawQuery, want.method, want.path, want.query)
		}
		if !sameJSON(b, want.body) {
			t.Errorf("call %d (%s %s): body %s, want %s", i, r.Method, r.URL.Path, b, want.body)
		}
		for k, v := range want.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(want.status)
		_, _ = w.Write([]byte(want.answer))
	}))
	t.Cleanup(func() {
		srv.Close()
		if i != len(calls) {
			t.Errorf("%d of %d calls made", i, len(calls))
		}
	})
	return newClient(t, srv.URL)
}

func sameJSON(got []byte, want string) bool {
	if len(got) == 0 || want == "" {
		return len(got) == 0 && want == ""
	}
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

const threadJSON = `{"thread_id":"11111111-1111-1111-1111-111111111111","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06Z",` +
	`"state_updated_at":"2026-01-02T03:04:06Z","metadata":{"graph_id":"agent","user":"u1"},"status":"interrupted","values":{"log":["a"]},` +
	`"interrupts":{"task1":[{"value":{"question":"ok?"},"id":"i1"}]},"config":{},"error":null}`

func TestThreadsCRUDSendsTheSpecsShapes(t *testing.T) {
	t.Parallel()
	tid := "11111111-1111-1111-1111-111111111111"
	c := fakeAPI(t, []fakeCall{
		{method: "POST", path: "/threads", body: `{"metadata":{}}`, status: 200, answer: threadJSON},
		{method: "POST", path: "/threads", body: `{"thread_id":"` + tid + `","metadata":{"user":"u1","graph_id":"agent"},"if_exists":"do_nothing",` +
			`"ttl":{"ttl":90,"strategy":"delete"},"supersteps":[{"updates":[{"values":{"log":["a"]},"as_node":"a"}]},{"updates":[{"values":null,"command":{"resume":"yes"},"as_node":"__input__"}]}]}`,
			status: 200, answer: threadJSON},
		{method: "POST", path: "/threads", body: `{"thread_id":"` + tid + `","metadata":{}}`, status: 409, answer: `{"detail":"thread exists"}`},
		{method: "GET", path: "/threads/" + tid, status: 200, answer: threadJSON},
		{method: "PATCH", path: "/threads/" + tid, body: `{"metadata":{"user":"u2"},"ttl":{"ttl":60,"strategy":"delete"}}`, status: 200, answer: threadJSON},
		{method: "DELETE", path: "/threads/" + tid, status: 204},
		{method: "POST", path: "/threads/" + tid + "/copy", status: 200, answer: threadJSON},
		{method: "POST", path: "/threads/search", body: `{}`, status: 200, answer: `[]`},
		{method: "POST", path: "/threads/search", body: `{"metadata":{"user":"u1"},"ids":["` + tid + `"],"values":{"k":1},"status":"interrupted",` +
			`"limit":1,"offset":3,"sort_by":"updated_at","sort_order":"asc","select":["thread_id","status"]}`,
			status: 200, answer: `[` + threadJSON + `]`, header: map[string]string{"X-Pagination-Next": "4", "X-Pagination-Total": "9"}},
		{method: "POST", path: "/threads/count", body: `{}`, status: 200, answer: `12`},
		{method: "POST", path: "/threads/count", body: `{"metadata":{"user":"u1"},"status":"idle"}`, status: 200, answer: `3`},
		{method: "PATCH", path: "/threads/" + tid + "/state", body: `{"metadata":{"reviewed":true}}`, status: 200, answer: `{}`},
	})
	ctx := context.Background()
	th, err := c.Threads.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if th.ThreadID != tid || th.Status != "interrupted" || th.Metadata["user"] != "u1" || th.Interrupts["task1"][0].ID != "i1" ||
		!th.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || string(th.Error) != "null" {
		t.Fatalf("Create decoded %+v", th)
	}
	if _, err := c.Threads.Create(ctx, &client.ThreadCreate{ThreadID: tid, Metadata: map[string]any{"user": "u1"}, GraphID: "agent", IfExists: "do_nothing",
		TTL: 90 * time.Minute, Supersteps: []client.Superstep{
			{Updates: []client.StateUpdate{{Values: map[string]any{"log": []string{"a"}}, AsNode: "a"}}},
			{Updates: []client.StateUpdate{{Command: &client.Command{Resume: "yes"}, AsNode: "__input__"}}},
		}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Threads.Create(ctx, &client.ThreadCreate{ThreadID: tid}); statusOf(err) != 409 {
		t.Fatalf("Create a taken id = %v, want the 409", err)
	}
	if th, err := c.Threads.Get(ctx, tid); err != nil || th.Values["log"] == nil {
		t.Fatalf("Get = %+v, %v", th, err)
	}
	if _, err := c.Threads.Update(ctx, tid, client.ThreadUpdate{Metadata: map[string]any{"user": "u2"}, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := c.Threads.Delete(ctx, tid); err != nil {
		t.Fatal(err)
	}
	if th, err := c.Threads.Copy(ctx, tid); err != nil || th.ThreadID != tid {
		t.Fatalf("Copy = %+v, %v", th, err)
	}
	if p, err := c.Threads.Search(ctx, nil); err != nil || len(p.Threads) != 0 || p.Next != -1 || p.Total != -1 {
		t.Fatalf("Search with no headers = %+v, %v; want an empty last page, total unknown", p, err)
	}
	p, err := c.Threads.Search(ctx, &client.ThreadSearch{Metadata: map[string]any{"user": "u1"}, IDs: []string{tid}, Values: map[string]any{"k": 1},
		Status: "interrupted", Limit: 1, Offset: 3, SortBy: "updated_at", SortOrder: "asc", Select: []string{"thread_id", "status"}})
	if err != nil || len(p.Threads) != 1 || p.Next != 4 || p.Total != 9 {
		t.Fatalf("Search = %+v, %v; want one thread, next 4 of 9", p, err)
	}
	if n, err := c.Threads.Count(ctx, nil); err != nil || n != 12 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	if n, err := c.Threads.Count(ctx, &client.ThreadCount{Metadata: map[string]any{"user": "u1"}, Status: "idle"}); err != nil || n != 3 {
		t.Fatalf("Count filtered = %d, %v", n, err)
	}
	if err := c.Threads.PatchState(ctx, tid, map[string]any{"reviewed": true}); err != nil {
		t.Fatal(err)
	}
}

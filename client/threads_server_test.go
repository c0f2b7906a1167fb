package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/superstep-dev/superstep/client"
)

// TestThreadsAgainstTheServer drives thread create, get, update, search,
// count, copy and delete against the real server.
func TestThreadsAgainstTheServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := serveGraphs(t, nil)
	th, err := c.Threads.Create(ctx, &client.ThreadCreate{Metadata: map[string]any{"user": "ana"}})
	if err != nil || th.Status != "idle" || th.Metadata["user"] != "ana" || th.CreatedAt.IsZero() {
		t.Fatalf("create = %+v %v", th, err)
	}
	_, err = c.Threads.Create(ctx, &client.ThreadCreate{ThreadID: th.ThreadID})
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 409 {
		t.Fatalf("creating it again = %v, want a 409 *Error", err)
	}
	same, err := c.Threads.Create(ctx, &client.ThreadCreate{ThreadID: th.ThreadID, IfExists: "do_nothing"})
	if err != nil || same.ThreadID != th.ThreadID {
		t.Fatalf("do_nothing = %+v %v", same, err)
	}
	if _, err := c.Runs.Wait(ctx, th.ThreadID, "approval", &client.RunCreate{Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Threads.Get(ctx, th.ThreadID)
	if err != nil || got.Status != "interrupted" || len(got.Interrupts) != 1 || got.Metadata["graph_id"] != "approval" {
		t.Fatalf("get after a run = %+v %v", got, err)
	}
	up, err := c.Threads.Update(ctx, th.ThreadID, client.ThreadUpdate{Metadata: map[string]any{"team": "red"}})
	if err != nil || up.Metadata["user"] != "ana" || up.Metadata["team"] != "red" {
		t.Fatalf("update = %+v %v", up, err)
	}
	if _, err := c.Threads.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	page, err := c.Threads.Search(ctx, &client.ThreadSearch{Metadata: map[string]any{"team": "red"}})
	if err != nil || len(page.Threads) != 1 || page.Threads[0].ThreadID != th.ThreadID || page.Total != 1 {
		t.Fatalf("search = %+v %v", page, err)
	}
	if n, err := c.Threads.Count(ctx, &client.ThreadCount{Status: "interrupted"}); err != nil || n != 1 {
		t.Fatalf("count interrupted = %d %v", n, err)
	}
	cp, err := c.Threads.Copy(ctx, th.ThreadID)
	if err != nil || cp.ThreadID == th.ThreadID || fmt.Sprint(cp.Values) != fmt.Sprint(got.Values) {
		t.Fatalf("copy = %+v %v", cp, err)
	}
	if err := c.Threads.Delete(ctx, th.ThreadID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Threads.Get(ctx, th.ThreadID); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Fatalf("get after delete = %v, want a 404", err)
	}
	if n, err := c.Threads.Count(ctx, nil); err != nil || n != 2 {
		t.Fatalf("threads left = %d %v, want the copy and the empty one", n, err)
	}
}

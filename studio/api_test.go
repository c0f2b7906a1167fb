package studio_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/studio"
)

type noteState struct {
	Notes []string `json:"notes" reduce:"append"`
}

// TestAPIAndPagesShareThreads: a run started through the Agent Server API
// is on the Studio's threads page and its thread page, and a thread the
// Studio started is an API thread, with its values.
func TestAPIAndPagesShareThreads(t *testing.T) {
	t.Parallel()
	sg := engine.NewStateGraph[noteState]()
	sg.AddNode("note", func(context.Context, noteState) (engine.Output, error) { return engine.Update{"notes": "noted"}, nil })
	sg.AddEdge(engine.Start, "note").AddEdge("note", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := studio.Open(context.Background(), studio.Config{Graphs: map[string]engine.Compiled{"notes": g}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	// API → pages.
	res, err := http.Post(srv.URL+"/threads/from-the-sdk/runs/wait", "application/json",
		strings.NewReader(`{"assistant_id":"notes","input":{"notes":["sdk"]},"if_not_exists":"create"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), `"notes":["sdk","noted"]`) {
		t.Fatalf("runs.wait = %d %s", res.StatusCode, b)
	}
	for _, path := range []string{"/threads", "/threads/from-the-sdk"} {
		res, err := http.DefaultClient.Do(pageRequest(t, srv.URL+path))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page), "from-the-sdk") {
			t.Fatalf("page %s = %d %s; want the SDK's thread on it", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}

	// Pages → API.
	if _, err := s.Runs().Start(context.Background(), "notes", "from-the-page", map[string]any{"notes": []any{"page"}}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Runs().Wait(context.Background(), "from-the-page"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/threads/from-the-page", nil)
	req.Header.Set("Accept", "*/*") // the JS SDK's
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var th map[string]any
	err = json.NewDecoder(res.Body).Decode(&th)
	res.Body.Close()
	if err != nil || th["status"] != "idle" || th["values"].(map[string]any)["notes"] == nil {
		t.Fatalf("the Studio's thread through the API: %v %v", th, err)
	}

	// A thread made through the API with no run yet is on the threads
	// page as such, and its page says so (not a 404: it exists).
	res, err = http.Post(srv.URL+"/threads", "application/json", strings.NewReader(`{"thread_id":"made-by-the-sdk"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for path, want := range map[string]string{"/threads": "no run yet", "/threads/made-by-the-sdk": "has not run yet"} {
		res, err := http.DefaultClient.Do(pageRequest(t, srv.URL+path))
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(page), want) {
			t.Fatalf("page %s = %d; want it to say %q", path, res.StatusCode, want)
		}
	}
}

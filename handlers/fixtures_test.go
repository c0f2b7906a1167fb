package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

type flowState struct {
	Log    []string `json:"log" reduce:"append"`
	Answer string   `json:"answer"`
	N      int      `json:"n"`
}

// gate holds node "slow" until released and says when it is entered.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 16), release: make(chan struct{})} }

// flowGraph is START → fetch → slow → END. slow waits on its gate (when
// the gate is nil it does not wait).
func flowGraph(t testing.TB, g *gate) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("fetch", func(context.Context, flowState) (engine.Output, error) {
		return engine.Update{"log": "fetch"}, nil
	})
	sg.AddNode("slow", func(ctx context.Context, _ flowState) (engine.Output, error) {
		if g != nil {
			g.entered <- struct{}{}
			select {
			case <-g.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return engine.Update{"log": "slow"}, nil
	})
	sg.AddEdge(engine.Start, "fetch").AddEdge("fetch", "slow").AddEdge("slow", engine.End)
	return compileFlow(t, sg)
}

// approvalGraph asks a person in node "review" and records the answer;
// "publish" runs only when the answer was true.
func approvalGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("draft", func(context.Context, flowState) (engine.Output, error) {
		return engine.Update{"log": "draft"}, nil
	})
	sg.AddNode("review", func(ctx context.Context, _ flowState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, map[string]any{"question": "Ship it?", "html": "<script>alert(1)</script>"})
		if err != nil {
			return nil, err
		}
		return engine.Update{"answer": fmt.Sprint(a)}, nil
	})
	sg.AddNode("publish", func(context.Context, flowState) (engine.Output, error) {
		return engine.Update{"log": "published"}, nil
	})
	sg.AddEdge(engine.Start, "draft").AddEdge("draft", "review")
	sg.AddConditionalEdges("review", func(_ context.Context, s flowState) (engine.Route, error) {
		if s.Answer == "true" {
			return engine.To("yes"), nil
		}
		return engine.To("no"), nil
	}, map[string]string{"yes": "publish", "no": engine.End})
	sg.AddEdge("publish", engine.End)
	return compileFlow(t, sg)
}

// fanInGraph has a node reached by paths of different lengths, which the
// topology lint warns about.
func fanInGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	for _, n := range []string{"left", "right", "extra", "merge"} {
		sg.AddNode(n, func(context.Context, flowState) (engine.Output, error) { return nil, nil })
	}
	sg.AddEdge(engine.Start, "left").AddEdge(engine.Start, "right").AddEdge("left", "merge").
		AddEdge("right", "extra").AddEdge("extra", "merge").AddEdge("merge", engine.End)
	return compileFlow(t, sg)
}

func compileFlow(t testing.TB, sg *engine.StateGraph[flowState]) engine.Compiled {
	t.Helper()
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type fixture struct {
	srv  *httptest.Server
	runs *runs.Manager
	gate *gate
}

// setup serves the Studio's routes over the three test graphs: flow
// (gated), approval and fanin.
func setup(t testing.TB) *fixture {
	t.Helper()
	g := newGate()
	f := serve(t, map[string]engine.Compiled{"flow": flowGraph(t, g), "approval": approvalGraph(t), "fanin": fanInGraph(t)})
	f.gate = g
	return f
}

// serve serves the Studio's routes (behind Secure, as studio.Open does)
// over graphs, with a run manager of their own (made with opts).
func serve(t testing.TB, graphs map[string]engine.Compiled, opts ...runs.ManagerOption) *fixture {
	t.Helper()
	m, err := runs.NewManager(graphs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
	})
	return &fixture{srv: srv, runs: m}
}

// response is what a request got back.
type response struct {
	code     int
	body     string
	location string
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (f *fixture) get(t testing.TB, path string) response {
	t.Helper()
	return f.do(t, http.MethodGet, path, nil, nil)
}

// post sends a form the way a Studio page does (same origin).
func (f *fixture) post(t testing.TB, path string, form url.Values) response {
	t.Helper()
	return f.do(t, http.MethodPost, path, strings.NewReader(form.Encode()), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "same-origin", "Origin": f.srv.URL})
}

func (f *fixture) do(t testing.TB, method, path string, body io.Reader, headers map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, body: string(b), location: resp.Header.Get("Location")}
}

func (f *fixture) wait(t testing.TB, thread string) runs.Thread {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	th, err := f.runs.Wait(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func (f *fixture) values(t testing.TB, graph, thread string) map[string]any {
	t.Helper()
	g, err := f.runs.Graph(graph)
	if err != nil {
		t.Fatal(err)
	}
	s, err := g.Pregel().GetState(context.Background(), checkpoints.Config{ThreadID: thread})
	if err != nil {
		t.Fatal(err)
	}
	return s.Values
}

// list is the run manager's ListThreads for a test: a failure ends it.
func (f *fixture) list(t testing.TB, filter runs.ThreadFilter) []runs.Thread {
	t.Helper()
	ts, err := f.runs.ListThreads(context.Background(), filter)
	if err != nil {
		t.Fatalf("ListThreads(%+v): %v", filter, err)
	}
	return ts
}

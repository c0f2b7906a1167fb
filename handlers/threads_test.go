package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// overlayOf is the graph overlay a thread page starts with.
func overlayOf(t *testing.T, page string) web.GraphState {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script id="graph-state" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no graph overlay: %.500s", page)
	}
	var g web.GraphState
	if err := json.Unmarshal([]byte(m[1]), &g); err != nil {
		t.Fatalf("overlay %s: %v", m[1], err)
	}
	return g
}

// The thread page honours ?expand= as the graph page does: the research
// subgraph drawn open with its inner nodes lit by what they did (plan and
// search done, review waiting), links that keep the person on the thread,
// the inner tasks named by their path in the timeline; a value naming no
// subgraph node is a 400 that says which.
func TestThreadPageExpandsSubgraphs(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	ctx := context.Background()
	if _, err := f.runs.Start(ctx, "research", "cmp", map[string]any{"question": "Compare Postgres and SQLite for a multi-user web app"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := f.wait(t, "cmp"); th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %+v, want it waiting at review", th)
	}
	tests := []struct {
		name, path string
		code       int
		want, not  []string
		nodes      map[string]string
	}{
		{"closed", "/threads/cmp", http.StatusOK,
			[]string{`id="n-research"`, `xlink:href="/threads/cmp?expand=research"`, `href="/threads/cmp?expand=research">expand</a>`},
			[]string{`id="n-research:plan"`, `id="collapse-all"`},
			map[string]string{"classify": "done", "research": "interrupted"}},
		{"open", "/threads/cmp?expand=research", http.StatusOK,
			[]string{`id="n-research:plan"`, `id="n-research:summarise"`, `href="/threads/cmp">collapse</a>`, `id="collapse-all"`, `<td>research:plan</td>`,
				`action="/threads/cmp/resume?expand=research"`},
			nil,
			map[string]string{"research": "interrupted", "research:plan": "done", "research:search": "done", "research:review": "interrupted"}},
		{"unknown subgraph", "/threads/cmp?expand=nope", http.StatusBadRequest, []string{"nope"}, []string{`id="graph-state"`}, nil},
		{"not a subgraph", "/threads/cmp?expand=classify", http.StatusBadRequest, []string{"classify"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := f.get(t, tt.path)
			if res.code != tt.code {
				t.Fatalf("%s = %d, want %d: %.500s", tt.path, res.code, tt.code, res.body)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.body, w) {
					t.Errorf("%s lacks %s", tt.path, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(res.body, n) {
					t.Errorf("%s has %s", tt.path, n)
				}
			}
			if tt.nodes == nil {
				return
			}
			got := overlayOf(t, res.body).Nodes
			for node, state := range tt.nodes {
				if got[node] != state {
					t.Errorf("%s: node %s is %q, want %q (overlay %v)", tt.path, node, got[node], state, got)
				}
			}
			if _, ok := got["research:summarise"]; ok {
				t.Errorf("%s: summarise, which has not run, is lit: %v", tt.path, got)
			}
		})
	}
}

// Answering from a page with a subgraph open leads back to the page with
// it still open.
func TestResumeKeepsTheOpenSubgraphs(t *testing.T) {
	t.Parallel()
	f := setupGraphs(t)
	if _, err := f.runs.Start(context.Background(), "research", "keep", map[string]any{"question": "Compare Postgres and SQLite for a multi-user web app"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "keep")
	res := f.post(t, "/threads/keep/resume?expand=research", url.Values{"action": {"approve"}})
	if res.code != http.StatusSeeOther || res.location != "/threads/keep?expand=research" {
		t.Fatalf("resume = %d to %q, want 303 to /threads/keep?expand=research", res.code, res.location)
	}
	if th := f.wait(t, "keep"); th.Status != runs.StatusIdle {
		t.Fatalf("after approving: %+v", th)
	}
}

package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/server"
)

// agentID is the id LangGraph's servers give graph "agent"'s assistant
// (uuid5 of the graph id in the URL namespace), as clients know it.
const agentID = "fe096781-5601-53d2-b2f6-0d3403f7e9ca"

type asstState struct {
	Count int      `json:"count"`
	Log   []string `json:"log" reduce:"append"`
}

func asstNode(name string) func(context.Context, asstState) (engine.Output, error) {
	return func(context.Context, asstState) (engine.Output, error) {
		return engine.Update{"log": name}, nil
	}
}

// asstGraphs registers "agent": START → inc, whose router goes to the
// subgraph sub ("again") or to done ("done"); sub → done → END; done has
// breakpoints before and after, inc after. sub runs child_a then the
// subgraph inner (leaf). "plain" is one node.
func asstGraphs(t *testing.T) map[string]engine.Compiled {
	t.Helper()
	compile := func(g *engine.StateGraph[asstState], opts engine.CompileOptions) engine.Compiled {
		opts.Checkpointer = checkpoints.NewMemory()
		c, err := g.Compile(opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	inner := engine.NewStateGraph[asstState]()
	inner.AddNode("leaf", asstNode("leaf")).AddEdge(engine.Start, "leaf").AddEdge("leaf", engine.End)
	sub := engine.NewStateGraph[asstState]()
	sub.AddNode("child_a", asstNode("child_a")).AddSubgraph("inner", compile(inner, engine.CompileOptions{Name: "inner"}))
	sub.AddSequence(engine.Start, "child_a", "inner", engine.End)
	agent := engine.NewStateGraph[asstState]()
	agent.AddNode("inc", asstNode("inc")).AddSubgraph("sub", compile(sub, engine.CompileOptions{Name: "sub"})).AddNode("done", asstNode("done"))
	agent.AddEdge(engine.Start, "inc")
	agent.AddConditionalEdges("inc", func(_ context.Context, s asstState) (engine.Route, error) {
		if s.Count > 0 {
			return engine.To("again"), nil
		}
		return engine.To("done"), nil
	}, map[string]string{"again": "sub", "done": "done"})
	agent.AddEdge("sub", "done").AddEdge("done", engine.End)
	plain := engine.NewStateGraph[asstState]()
	plain.AddNode("only", asstNode("only")).AddEdge(engine.Start, "only").AddEdge("only", engine.End)
	return map[string]engine.Compiled{
		"agent": compile(agent, engine.CompileOptions{Name: "agent", InterruptBefore: []string{"done"}, InterruptAfter: []string{"done", "inc"}}),
		"plain": compile(plain, engine.CompileOptions{Name: "plain"}),
	}
}

// asstBackends runs test over the memory store and over Postgres.
func asstBackends(t *testing.T, test func(t *testing.T, store func() runs.AssistantStore)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		s := runs.NewMemoryAssistants()
		test(t, func() runs.AssistantStore { return s })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		s := pgthreads.NewAssistants(pgtest.Tx(t))
		test(t, func() runs.AssistantStore { return s })
	})
}

type asstClient struct {
	t *testing.T
	h http.Handler
}

func asstAPI(t *testing.T, store runs.AssistantStore) *asstClient {
	t.Helper()
	m, err := runs.NewManager(asstGraphs(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	api, err := server.New(server.Config{Runs: m, Assistants: store})
	if err != nil {
		t.Fatal(err)
	}
	return &asstClient{t: t, h: api.Handler()}
}

type asstAnswer struct {
	code   int
	header http.Header
	body   []byte
}

// call sends body (a string as it is, else as JSON) as text/plain, as
// LangGraph Studio does.
func (c *asstClient) call(method, path string, body any) asstAnswer {
	c.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	}
	req.Header.Set("Accept", "*/*")
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return asstAnswer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

// must calls and checks the status, decoding the JSON answer into out.
func (c *asstClient) must(want int, method, path string, body any, out any) asstAnswer {
	c.t.Helper()
	a := c.call(method, path, body)
	if a.code != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, path, a.code, a.body, want)
	}
	if out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, a.body)
		}
	}
	return a
}

// detail checks an error answer: its status and a detail mentioning each
// of words.
func (c *asstClient) fails(want int, method, path string, body any, words ...string) {
	c.t.Helper()
	a := c.call(method, path, body)
	var e struct{ Detail string }
	if a.code != want || json.Unmarshal(a.body, &e) != nil || e.Detail == "" {
		c.t.Errorf("%s %s %v: %d %s, want %d with a detail", method, path, body, a.code, a.body, want)
		return
	}
	for _, w := range words {
		if !strings.Contains(e.Detail, w) {
			c.t.Errorf("%s %s %v: detail %q does not mention %q", method, path, body, e.Detail, w)
		}
	}
}

type asstWire struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
}

func asstIDs(as []asstWire) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.AssistantID)
	}
	return out
}

func TestAssistantsOnePerGraphFoundByGraphID(t *testing.T) {
	t.Parallel()
	asstBackends(t, func(t *testing.T, store func() runs.AssistantStore) {
		c := asstAPI(t, store())
		var raw map[string]any
		c.must(200, "GET", "/assistants/agent", nil, &raw)
		for _, k := range []string{"assistant_id", "graph_id", "config", "context", "metadata", "version", "name", "description", "created_at", "updated_at"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("assistant has no %q: %v", k, raw)
			}
		}
		var byAlias, byID, byUpper asstWire
		c.must(200, "GET", "/assistants/agent", nil, &byAlias)
		c.must(200, "GET", "/assistants/"+agentID, nil, &byID)
		c.must(200, "GET", "/assistants/"+strings.ToUpper(agentID), nil, &byUpper)
		if byAlias.AssistantID != agentID || byAlias.GraphID != "agent" || byAlias.Name != "agent" || byAlias.Version != 1 ||
			byAlias.Description != nil || len(byAlias.Config) != 0 || byAlias.Metadata["created_by"] != "system" {
			t.Errorf("graph agent's assistant = %+v, want id %s, name agent, created_by system, version 1", byAlias, agentID)
		}
		if byID.AssistantID != agentID || byUpper.AssistantID != agentID {
			t.Errorf("by id %+v, by upper-case id %+v: want the same assistant", byID, byUpper)
		}

		// A user's assistant is not a system one: Studio's exact search
		// lists the graphs' own.
		c.must(200, "POST", "/assistants", map[string]any{"graph_id": "agent", "name": "mine"}, nil)
		var found []asstWire
		a := c.must(200, "POST", "/assistants/search", `{"limit":10,"offset":0,"metadata":{"created_by":"system"}}`, &found)
		ids := asstIDs(found)
		sort.Strings(ids)
		plainID := asstGet(c, "plain").AssistantID
		want := []string{agentID, plainID}
		sort.Strings(want)
		if !slices.Equal(ids, want) {
			t.Errorf("Studio's search found %v, want the two graphs' assistants %v", ids, want)
		}
		if a.header.Get("X-Pagination-Total") != "2" || a.header.Get("X-Pagination-Next") != "" {
			t.Errorf("Studio's search: total %q next %q, want 2 and none", a.header.Get("X-Pagination-Total"), a.header.Get("X-Pagination-Next"))
		}

		// Building the API again over the same store (a restart) keeps one
		// assistant per graph, with the changes made to it.
		c.must(200, "PATCH", "/assistants/agent", map[string]any{"metadata": map[string]any{"team": "a"}}, nil)
		c2 := asstAPI(t, store())
		var n int
		c2.must(200, "POST", "/assistants/count", `{"metadata":{"created_by":"system"}}`, &n)
		if n != 2 {
			t.Errorf("after a restart, %d system assistants, want 2", n)
		}
		if got := asstGet(c2, "agent"); got.Version != 2 || got.Metadata["team"] != "a" {
			t.Errorf("after a restart, agent's assistant = %+v, want the patched version 2", got)
		}
	})
}

func asstGet(c *asstClient, id string) asstWire {
	c.t.Helper()
	var a asstWire
	c.must(200, "GET", "/assistants/"+id, nil, &a)
	return a
}

func TestAssistantsCreatePatchVersionsLatestDelete(t *testing.T) {
	t.Parallel()
	asstBackends(t, func(t *testing.T, store func() runs.AssistantStore) {
		c := asstAPI(t, store())
		const id = "6f1d9a52-3c7e-4b8a-9f00-112233445566"
		var made asstWire
		c.must(200, "POST", "/assistants", map[string]any{
			"assistant_id": id, "graph_id": "agent", "name": "reviewer", "description": "reviews",
			"config": map[string]any{"recursion_limit": 5}, "metadata": map[string]any{"owner": "ann", "tier": 1},
		}, &made)
		if made.AssistantID != id || made.Version != 1 || made.Name != "reviewer" || made.Description == nil || *made.Description != "reviews" ||
			made.Config["recursion_limit"] != float64(5) || made.Metadata["owner"] != "ann" {
			t.Fatalf("created %+v", made)
		}
		// No name: "Untitled", as upstream; no id: a fresh UUID.
		var anon asstWire
		c.must(200, "POST", "/assistants", map[string]any{"graph_id": "plain"}, &anon)
		if anon.Name != "Untitled" || anon.AssistantID == "" || anon.AssistantID == id {
			t.Errorf("assistant without name or id = %+v", anon)
		}

		c.fails(409, "POST", "/assistants", map[string]any{"assistant_id": id, "graph_id": "plain"}, id)
		c.fails(409, "POST", "/assistants", map[string]any{"assistant_id": id, "graph_id": "plain", "if_exists": "raise"}, id)
		var same asstWire
		c.must(200, "POST", "/assistants", map[string]any{"assistant_id": id, "graph_id": "plain", "if_exists": "do_nothing"}, &same)
		if same.GraphID != "agent" || same.Name != "reviewer" {
			t.Errorf("do_nothing answered %+v, want the existing assistant", same)
		}

		var patched asstWire
		c.must(200, "PATCH", "/assistants/"+id, map[string]any{"name": "reviewer 2", "metadata": map[string]any{"tier": 2}, "graph_id": "plain"}, &patched)
		if patched.Version != 2 || patched.Name != "reviewer 2" || patched.GraphID != "plain" || patched.Metadata["owner"] != "ann" ||
			patched.Metadata["tier"] != float64(2) || patched.Config["recursion_limit"] != float64(5) || patched.CreatedAt != made.CreatedAt {
			t.Errorf("patched = %+v, want version 2 with metadata merged and config kept", patched)
		}

		var versions []asstWire
		c.must(200, "POST", "/assistants/"+id+"/versions", `{}`, &versions)
		if len(versions) != 2 || versions[0].Version != 2 || versions[1].Version != 1 || versions[1].Name != "reviewer" {
			t.Fatalf("versions = %+v, want 2 then 1", versions)
		}
		c.must(200, "POST", "/assistants/"+id+"/versions", map[string]any{"metadata": map[string]any{"tier": 1}}, &versions)
		if len(versions) != 1 || versions[0].Version != 1 {
			t.Errorf("versions with tier 1 = %+v, want version 1", versions)
		}

		var latest asstWire
		c.must(200, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 1}, &latest)
		if latest.Version != 1 || latest.Name != "reviewer" || latest.GraphID != "agent" {
			t.Errorf("latest 1 = %+v, want version 1's fields", latest)
		}
		if got := asstGet(c, id); got.Version != 1 || got.Name != "reviewer" {
			t.Errorf("after latest 1, GET = %+v", got)
		}
		c.fails(404, "POST", "/assistants/"+id+"/latest", map[string]any{"version": 9}, "version 9")

		// The system assistant is found by its graph id for every route.
		c.must(200, "POST", "/assistants/agent/versions", `{"limit":1}`, &versions)
		if len(versions) != 1 || versions[0].AssistantID != agentID {
			t.Errorf("versions of agent = %+v", versions)
		}

		if a := c.call("DELETE", "/assistants/"+id+"?delete_threads=false", nil); a.code != 204 || len(a.body) != 0 {
			t.Errorf("delete: %d %s, want 204 without a body", a.code, a.body)
		}
		c.fails(404, "GET", "/assistants/"+id, nil, id)
		c.fails(404, "DELETE", "/assistants/"+id, nil, id)
		c.fails(404, "POST", "/assistants/"+id+"/versions", `{}`, id)
	})
}

func TestAssistantsSearchPagesAndHeaders(t *testing.T) {
	t.Parallel()
	asstBackends(t, func(t *testing.T, store func() runs.AssistantStore) {
		c := asstAPI(t, store())
		for _, n := range []string{"e", "b", "d", "a", "c"} {
			c.must(200, "POST", "/assistants", map[string]any{"graph_id": "plain", "name": n, "metadata": map[string]any{"k": n}}, nil)
		}
		// plain has 6 assistants: its own and five.
		page := func(body string) ([]string, string, string) {
			t.Helper()
			var found []asstWire
			a := c.must(200, "POST", "/assistants/search", body, &found)
			var names []string
			for _, f := range found {
				names = append(names, f.Name)
			}
			return names, a.header.Get("X-Pagination-Next"), a.header.Get("X-Pagination-Total")
		}
		for _, cs := range []struct {
			body, next string
			names      []string
		}{
			{`{"graph_id":"plain","sort_by":"name","sort_order":"asc","limit":2}`, "2", []string{"a", "b"}},
			{`{"graph_id":"plain","sort_by":"name","sort_order":"asc","limit":2,"offset":2}`, "4", []string{"c", "d"}},
			// Full and last: no next page.
			{`{"graph_id":"plain","sort_by":"name","sort_order":"asc","limit":2,"offset":4}`, "", []string{"e", "plain"}},
			// Not full: no next page.
			{`{"graph_id":"plain","sort_by":"name","sort_order":"desc","limit":4,"offset":3}`, "", []string{"c", "b", "a"}},
			{`{"graph_id":"plain","sort_by":"name","limit":1}`, "1", []string{"plain"}},
			{`{"metadata":{"k":"d"}}`, "", []string{"d"}},
			{`{"graph_id":"plain","name":"b"}`, "", []string{"b"}},
		} {
			names, next, total := page(cs.body)
			if !slices.Equal(names, cs.names) || next != cs.next {
				t.Errorf("search %s: %v next %q, want %v next %q", cs.body, names, next, cs.names, cs.next)
			}
			if strings.Contains(cs.body, `"graph_id":"plain","sort`) && total != "6" {
				t.Errorf("search %s: total %q, want 6", cs.body, total)
			}
		}
		// The default: newest first, ten at most.
		var found []asstWire
		c.must(200, "POST", "/assistants/search", `{}`, &found)
		if len(found) != 7 || found[0].Name != "c" {
			t.Errorf("default search = %v, want 7 newest first (c last created)", asstIDs(found))
		}
		var sel []map[string]any
		c.must(200, "POST", "/assistants/search", `{"graph_id":"plain","select":["assistant_id","name"],"limit":1}`, &sel)
		if len(sel) != 1 || len(sel[0]) != 2 || sel[0]["name"] == nil || sel[0]["assistant_id"] == nil {
			t.Errorf("select assistant_id, name = %v", sel)
		}
		var n int
		c.must(200, "POST", "/assistants/count", `{"graph_id":"plain"}`, &n)
		if n != 6 {
			t.Errorf("count plain = %d, want 6", n)
		}
		c.must(200, "POST", "/assistants/count", ``, &n)
		if n != 7 {
			t.Errorf("count all = %d, want 7", n)
		}
	})
}

func TestAssistantsRefuseBadRequests(t *testing.T) {
	t.Parallel()
	c := asstAPI(t, nil)
	for _, cs := range []struct {
		code         int
		method, path string
		body         any
		words        []string
	}{
		{422, "POST", "/assistants/search", `{"limit":0}`, []string{"limit"}},
		{422, "POST", "/assistants/search", `{"limit":1001}`, []string{"limit"}},
		{422, "POST", "/assistants/search", `{"limit":"ten"}`, []string{"limit"}},
		{422, "POST", "/assistants/search", `{"offset":-1}`, []string{"offset"}},
		{422, "POST", "/assistants/search", `{"sort_by":"rank"}`, []string{"sort_by", "rank"}},
		{422, "POST", "/assistants/search", `{"sort_order":"up"}`, []string{"sort_order"}},
		{422, "POST", "/assistants/search", `{"select":["secret"]}`, []string{"select", "secret"}},
		{422, "POST", "/assistants/search", `{"metadata":[1]}`, []string{"metadata"}},
		{422, "POST", "/assistants/search", `{"limit":1`, []string{"body"}},
		{422, "POST", "/assistants", `{}`, []string{"graph_id", "agent", "plain"}},
		{422, "POST", "/assistants", `{"graph_id":"agent","assistant_id":"nope"}`, []string{"assistant_id", "nope"}},
		{422, "POST", "/assistants", `{"graph_id":"agent","if_exists":"replace"}`, []string{"if_exists"}},
		{422, "POST", "/assistants", `{"graph_id":"agent","config":"x"}`, []string{"config"}},
		{404, "POST", "/assistants", `{"graph_id":"nope"}`, []string{"nope", "agent"}},
		{404, "GET", "/assistants/nope", nil, []string{"nope"}},
		{404, "GET", "/assistants/0b5c3b9e-1111-4a4a-8a8a-000000000000", nil, []string{"0b5c3b9e-1111-4a4a-8a8a-000000000000"}},
		{404, "GET", "/assistants/nope/graph", nil, []string{"nope"}},
		{422, "GET", "/assistants/agent/graph?xray=maybe", nil, []string{"xray"}},
		{422, "GET", "/assistants/agent/graph?xray=-1", nil, []string{"xray"}},
		{422, "GET", "/assistants/agent/subgraphs?recurse=yes", nil, []string{"recurse"}},
		{422, "POST", "/assistants/agent/latest", `{}`, []string{"version"}},
		{422, "POST", "/assistants/agent/latest", `{"version":"1"}`, []string{"version"}},
		{404, "POST", "/assistants/agent/latest", `{"version":2}`, []string{"version 2"}},
		{422, "POST", "/assistants/agent/versions", `{"limit":-5}`, []string{"limit"}},
		{422, "PATCH", "/assistants/agent", `{"name":""}`, []string{"name"}},
		{404, "PATCH", "/assistants/agent", `{"graph_id":"nope"}`, []string{"nope"}},
		{422, "DELETE", "/assistants/agent?delete_threads=true", nil, []string{"delete_threads"}},
		{422, "DELETE", "/assistants/agent?delete_threads=maybe", nil, []string{"delete_threads"}},
	} {
		c.fails(cs.code, cs.method, cs.path, cs.body, cs.words...)
	}
	// None of it changed the graph's assistant.
	if got := asstGet(c, "agent"); got.Version != 1 {
		t.Errorf("after refused requests agent's assistant is at version %d", got.Version)
	}
}

type asstGraph struct {
	Nodes []struct {
		ID       string         `json:"id"`
		Type     string         `json:"type"`
		Data     map[string]any `json:"data"`
		Metadata map[string]any `json:"metadata"`
	} `json:"nodes"`
	Edges []struct {
		Source      string  `json:"source"`
		Target      string  `json:"target"`
		Data        *string `json:"data"`
		Conditional *bool   `json:"conditional"`
	} `json:"edges"`
}

func (g asstGraph) nodeIDs() []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.ID)
	}
	sort.Strings(out)
	return out
}

// edges lists "source→target" with "?" for a conditional edge and
// "[data]" when it has data.
func (g asstGraph) edges() []string {
	var out []string
	for _, e := range g.Edges {
		s := e.Source + "→" + e.Target
		if e.Conditional == nil {
			s += " (no conditional)"
		} else if *e.Conditional {
			s += "?"
		}
		if e.Data != nil {
			s += "[" + *e.Data + "]"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func TestAssistantGraphDrawsBreakpointsRoutersAndXray(t *testing.T) {
	t.Parallel()
	c := asstAPI(t, nil)
	var g asstGraph
	c.must(200, "GET", "/assistants/agent/graph", nil, &g)
	if want := []string{"__end__", "__start__", "done", "inc", "sub"}; !slices.Equal(g.nodeIDs(), want) {
		t.Errorf("nodes %v, want %v", g.nodeIDs(), want)
	}
	for _, n := range g.Nodes {
		switch n.ID {
		case "__start__", "__end__":
			props, _ := n.Data["properties"].(map[string]any)
			if n.Type != "schema" || props["count"] == nil || props["log"] == nil || n.Metadata != nil {
				t.Errorf("%s = %+v, want a schema node carrying the state's schema", n.ID, n)
			}
			// Input is an update of any keys; output has them all.
			if _, required := n.Data["required"]; required != (n.ID == "__end__") {
				t.Errorf("%s: required %v", n.ID, n.Data["required"])
			}
		default:
			if n.Type != "runnable" || n.Data["name"] != n.ID || n.Metadata == nil {
				t.Errorf("%s = %+v, want a runnable named after it with metadata", n.ID, n)
			}
		}
		want := map[string]any{"done": "before,after", "inc": "after"}[n.ID]
		if n.Metadata["__interrupt"] != want {
			t.Errorf("%s: __interrupt %v, want %v", n.ID, n.Metadata["__interrupt"], want)
		}
	}
	want := []string{"__start__→inc", "done→__end__", "inc→done?", "inc→sub?[again]", "sub→done"}
	if !slices.Equal(g.edges(), want) {
		t.Errorf("edges\n %v\nwant\n %v", g.edges(), want)
	}
	for _, q := range []string{"?xray=false", "?xray=0"} {
		var same asstGraph
		c.must(200, "GET", "/assistants/"+agentID+"/graph"+q, nil, &same)
		if !slices.Equal(same.nodeIDs(), g.nodeIDs()) {
			t.Errorf("%s: nodes %v, want the plain drawing", q, same.nodeIDs())
		}
	}

	// One level: sub's nodes in place of sub, its START and END left out,
	// the router's edge led to its first node and its last to done.
	var one asstGraph
	c.must(200, "GET", "/assistants/agent/graph?xray=1", nil, &one)
	if want := []string{"__end__", "__start__", "done", "inc", "sub:child_a", "sub:inner"}; !slices.Equal(one.nodeIDs(), want) {
		t.Errorf("xray=1 nodes %v, want %v", one.nodeIDs(), want)
	}
	want = []string{"__start__→inc", "done→__end__", "inc→done?", "inc→sub:child_a?[again]", "sub:child_a→sub:inner", "sub:inner→done"}
	if !slices.Equal(one.edges(), want) {
		t.Errorf("xray=1 edges\n %v\nwant\n %v", one.edges(), want)
	}
	for _, n := range one.Nodes {
		if n.ID == "sub:child_a" && n.Data["name"] != "child_a" {
			t.Errorf("sub:child_a is named %v, want child_a", n.Data["name"])
		}
	}
	// Every level, by depth and by true.
	for _, q := range []string{"?xray=2", "?xray=true"} {
		var all asstGraph
		c.must(200, "GET", "/assistants/agent/graph"+q, nil, &all)
		if want := []string{"__end__", "__start__", "done", "inc", "sub:child_a", "sub:inner:leaf"}; !slices.Equal(all.nodeIDs(), want) {
			t.Errorf("%s nodes %v, want %v", q, all.nodeIDs(), want)
		}
		want := []string{"__start__→inc", "done→__end__", "inc→done?", "inc→sub:child_a?[again]", "sub:child_a→sub:inner:leaf", "sub:inner:leaf→done"}
		if !slices.Equal(all.edges(), want) {
			t.Errorf("%s edges\n %v\nwant\n %v", q, all.edges(), want)
		}
	}
}

func TestAssistantSchemasAndSubgraphs(t *testing.T) {
	t.Parallel()
	c := asstAPI(t, nil)
	var s map[string]any
	c.must(200, "GET", "/assistants/agent/schemas", nil, &s)
	if s["graph_id"] != "agent" {
		t.Errorf("graph_id = %v", s["graph_id"])
	}
	for _, k := range []string{"input_schema", "output_schema", "state_schema"} {
		m, _ := s[k].(map[string]any)
		props, _ := m["properties"].(map[string]any)
		count, _ := props["count"].(map[string]any)
		log, _ := props["log"].(map[string]any)
		if m["type"] != "object" || count["type"] != "integer" || log["type"] != "array" {
			t.Errorf("%s = %v, want an object with count (integer) and log (array)", k, s[k])
		}
	}
	if in := s["input_schema"].(map[string]any); in["required"] != nil {
		t.Errorf("input_schema requires %v; a run's input may hold any keys", in["required"])
	}
	if st := s["state_schema"].(map[string]any); st["required"] == nil {
		t.Errorf("state_schema requires nothing; every state key is always there")
	}
	for _, k := range []string{"config_schema", "context_schema"} {
		if v, ok := s[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}

	keys := func(path string) []string {
		t.Helper()
		var m map[string]map[string]any
		c.must(200, "GET", path, nil, &m)
		var out []string
		for k, v := range m {
			if _, ok := v["state_schema"]; !ok {
				t.Errorf("%s: %s has no state_schema: %v", path, k, v)
			}
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, cs := range []struct {
		path string
		want []string
	}{
		{"/assistants/agent/subgraphs", []string{"sub"}},
		{"/assistants/agent/subgraphs?recurse=true", []string{"sub", "sub|inner"}},
		{"/assistants/agent/subgraphs/sub", []string{"sub"}},
		{"/assistants/agent/subgraphs/sub%7Cinner?recurse=true", []string{"sub|inner"}},
		{"/assistants/agent/subgraphs/nope", nil},
		{"/assistants/plain/subgraphs?recurse=true", nil},
	} {
		if got := keys(cs.path); !slices.Equal(got, cs.want) {
			t.Errorf("%s = %v, want %v", cs.path, got, cs.want)
		}
	}
}

package client_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/client"
)

func nodeIDs(g *client.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, n.ID)
	}
	slices.Sort(out)
	return out
}

func TestAssistantsGraphSchemasAndSubgraphs(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	ctx := context.Background()
	as, err := c.Assistants.Get(ctx, "nested")
	if err != nil {
		t.Fatal(err)
	}
	if as.GraphID != "nested" || as.Name != "nested" || as.Metadata["created_by"] != "system" || as.Version != 1 || as.CreatedAt.IsZero() {
		t.Fatalf("the graph's own assistant: %+v", as)
	}
	byID, err := c.Assistants.Get(ctx, as.AssistantID)
	if err != nil || byID.AssistantID != as.AssistantID {
		t.Fatalf("Get by id = %+v, %v", byID, err)
	}
	if _, err := c.Assistants.Get(ctx, "nope"); statusOf(err) != 404 {
		t.Fatalf("Get an unknown assistant = %v, want 404", err)
	}
	for _, tc := range []struct {
		opts *client.GetGraphOptions
		want string
	}{
		{nil, "__end__ __start__ pre sub"},
		{&client.GetGraphOptions{Xray: true}, "__end__ __start__ pre sub:ask"},
		{&client.GetGraphOptions{Depth: 1}, "__end__ __start__ pre sub:ask"},
	} {
		g, err := c.Assistants.GetGraph(ctx, "nested", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(nodeIDs(g), " "); got != tc.want {
			t.Errorf("GetGraph %+v: nodes %s, want %s", tc.opts, got, tc.want)
		}
		if len(g.Edges) == 0 || g.Edges[0].Source != "__start__" {
			t.Errorf("GetGraph %+v: edges %+v", tc.opts, g.Edges)
		}
	}
	if _, err := c.Assistants.GetGraph(ctx, "nested", &client.GetGraphOptions{Depth: -1}); err == nil {
		t.Error("a negative depth was sent")
	}
	s, err := c.Assistants.GetSchemas(ctx, "nested")
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(s.StateSchema, &state); err != nil || s.GraphID != "nested" || state.Properties["log"] == nil || len(s.InputSchema) == 0 {
		t.Fatalf("schemas %+v (%v): want the state's JSON Schema with log", s, err)
	}
	subs, err := c.Assistants.GetSubgraphs(ctx, "nested", nil)
	if err != nil || len(subs) != 1 || len(subs["sub"].StateSchema) == 0 {
		t.Fatalf("GetSubgraphs = %v, %v; want sub with its schemas", subs, err)
	}
	subs, err = c.Assistants.GetSubgraphs(ctx, "nested", &client.GetSubgraphsOptions{Namespace: "nope", Recurse: true})
	if err != nil || len(subs) != 0 {
		t.Fatalf("GetSubgraphs of an unknown namespace = %v, %v; want none", subs, err)
	}
	subs, err = c.Assistants.GetSubgraphs(ctx, "linear", &client.GetSubgraphsOptions{Recurse: true})
	if err != nil || len(subs) != 0 {
		t.Fatalf("GetSubgraphs of a flat graph = %v, %v; want none", subs, err)
	}
}

func TestAssistantsCreateUpdateVersionsSearchDelete(t *testing.T) {
	t.Parallel()
	c := serveGraphs(t, nil)
	ctx := context.Background()
	desc := "careful"
	a, err := c.Assistants.Create(ctx, client.AssistantCreate{GraphID: "linear", Name: "v", Description: &desc,
		Config: map[string]any{"recursion_limit": 5}, Metadata: map[string]any{"team": "blue"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.GraphID != "linear" || a.Name != "v" || a.Description == nil || *a.Description != desc || a.Version != 1 || a.Metadata["team"] != "blue" {
		t.Fatalf("Create = %+v", a)
	}
	if _, err := c.Assistants.Create(ctx, client.AssistantCreate{GraphID: "linear", AssistantID: a.AssistantID}); statusOf(err) != 409 {
		t.Fatalf("Create a taken id = %v, want 409", err)
	}
	same, err := c.Assistants.Create(ctx, client.AssistantCreate{GraphID: "linear", AssistantID: a.AssistantID, IfExists: "do_nothing"})
	if err != nil || same.Name != "v" {
		t.Fatalf("Create a taken id with do_nothing = %+v, %v; want the existing one", same, err)
	}
	if _, err := c.Assistants.Create(ctx, client.AssistantCreate{GraphID: "nope"}); statusOf(err) != 404 {
		t.Fatalf("Create on an unknown graph = %v, want 404", err)
	}
	name := "w"
	u, err := c.Assistants.Update(ctx, a.AssistantID, client.AssistantUpdate{Name: &name, Metadata: map[string]any{"team": "red"}})
	if err != nil || u.Name != "w" || u.Version != 2 || u.Metadata["team"] != "red" {
		t.Fatalf("Update = %+v, %v; want version 2 named w", u, err)
	}
	vs, err := c.Assistants.GetVersions(ctx, a.AssistantID, nil)
	if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 || vs[1].Name != "v" {
		t.Fatalf("GetVersions = %+v, %v; want 2 then 1", vs, err)
	}
	back, err := c.Assistants.SetLatest(ctx, a.AssistantID, 1)
	if err != nil || back.Name != "v" || back.Version != 1 {
		t.Fatalf("SetLatest 1 = %+v, %v", back, err)
	}
	if _, err := c.Assistants.SetLatest(ctx, a.AssistantID, 9); statusOf(err) != 404 {
		t.Fatalf("SetLatest of a missing version = %v, want 404", err)
	}
	// Four system assistants and this one: pages of two.
	page, err := c.Assistants.Search(ctx, &client.AssistantSearch{Limit: 2, SortBy: "name", SortOrder: "asc"})
	if err != nil || len(page.Assistants) != 2 || page.Next != 2 || page.Total != 5 || page.Assistants[0].Name != "approval" {
		t.Fatalf("Search page 1 = %+v, %v; want approval first, next 2 of 5", page, err)
	}
	last, err := c.Assistants.Search(ctx, &client.AssistantSearch{Limit: 2, Offset: 4, SortBy: "name", SortOrder: "asc"})
	if err != nil || len(last.Assistants) != 1 || last.Next != -1 || last.Assistants[0].Name != "v" {
		t.Fatalf("Search last page = %+v, %v; want v and no next", last, err)
	}
	sys, err := c.Assistants.Search(ctx, &client.AssistantSearch{Metadata: map[string]any{"created_by": "system"}, Select: []string{"graph_id"}})
	if err != nil || len(sys.Assistants) != 4 || sys.Assistants[0].GraphID == "" || sys.Assistants[0].AssistantID != "" {
		t.Fatalf("Search the system ones selecting graph_id = %+v, %v", sys, err)
	}
	if _, err := c.Assistants.Search(ctx, &client.AssistantSearch{SortBy: "colour"}); statusOf(err) != 422 {
		t.Fatalf("Search with a bad sort = %v, want 422", err)
	}
	if n, err := c.Assistants.Count(ctx, &client.AssistantCount{GraphID: "linear"}); err != nil || n != 2 {
		t.Fatalf("Count linear = %d, %v; want 2", n, err)
	}
	if n, err := c.Assistants.Count(ctx, nil); err != nil || n != 5 {
		t.Fatalf("Count = %d, %v; want 5", n, err)
	}
	if err := c.Assistants.Delete(ctx, a.AssistantID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Assistants.Get(ctx, a.AssistantID); statusOf(err) != 404 {
		t.Fatalf("Get a deleted assistant = %v, want 404", err)
	}
}

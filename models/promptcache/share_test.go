package promptcache_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/promptcache"
)

// TestSubgraphSharesParentPrefix: a subgraph node that opts in
// (ShareParentPrefix) is sent with its parent's rendered system and tools
// and reads their entries; one that does not is a lineage of its own; a
// shared call whose model differs from the parent's is a break named by
// comparison with the parent's call.
func TestSubgraphSharesParentPrefix(t *testing.T) {
	t.Parallel()
	parentSys := "You are the parent agent. " + strings.Repeat("Rules of the house, never to change. ", 200)
	childSys := "You are a researcher: " + strings.Repeat("look things up. ", 20)
	cases := []struct {
		name       string
		share      bool
		childModel string
		lineage    string
		read       bool // the child reads at least the parent's system
		breakDims  []promptcache.Dimension
	}{
		{"shared", true, "claude-sonnet-4-5", "subgraph:shared", true, nil},
		{"own lineage", false, "claude-sonnet-4-5", "main", false, nil},
		{"shared, other model", true, "claude-opus-4-1", "subgraph:shared", false, []promptcache.Dimension{promptcache.DimModel}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, promptcache.Config{})
			parentModel := f.anthropic(t, "claude-sonnet-4-5")
			childModel := f.anthropic(t, tc.childModel)
			type State struct {
				Messages []models.Message `json:"messages" reduce:"add_messages"`
			}
			sub := engine.NewStateGraph[State]()
			sub.AddNode("worker", func(ctx context.Context, s State) (engine.Output, error) {
				if tc.share {
					ctx = promptcache.ShareParentPrefix(ctx)
				}
				msgs := []models.Message{models.System(childSys), models.Human("Research the weather in Oslo.")}
				reply, err := models.Call(ctx, childModel, msgs, &models.CallOptions{Tools: tools[2:]})
				if err != nil {
					return nil, err
				}
				return engine.Update{"messages": []models.Message{reply}}, nil
			})
			sub.AddEdge(engine.Start, "worker")
			inner, err := sub.Compile(engine.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			g := engine.NewStateGraph[State]()
			g.AddNode("agent", func(ctx context.Context, s State) (engine.Output, error) {
				msgs := append([]models.Message{models.System(parentSys)}, s.Messages...)
				reply, err := models.Call(ctx, parentModel, msgs, &models.CallOptions{Tools: tools})
				if err != nil {
					return nil, err
				}
				return engine.Update{"messages": []models.Message{reply}}, nil
			})
			g.AddSubgraph("research", inner)
			g.AddEdge(engine.Start, "agent")
			g.AddEdge("agent", "research")
			graph, err := g.Compile(engine.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			thread := "subgraph-" + tc.name
			in := engine.Update{"messages": []models.Message{models.Human("Plan a trip to Oslo.")}}
			if _, err := graph.Invoke(context.Background(), in, &engine.RunOptions{ThreadID: thread}); err != nil {
				t.Fatal(err)
			}
			recs, err := f.cache.Records(context.Background(), thread)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 2 {
				t.Fatalf("%d records, want 2", len(recs))
			}
			parent, child := recs[0], recs[1]
			if parent.LineageKey != "|agent" || child.LineageKey != "research|worker" {
				t.Fatalf("lineage keys %q, %q", parent.LineageKey, child.LineageKey)
			}
			if child.Lineage != tc.lineage {
				t.Errorf("child lineage %q, want %q", child.Lineage, tc.lineage)
			}
			if want := map[bool]string{true: parent.CallID, false: ""}[tc.share]; child.PrevCallID != want {
				t.Errorf("child compared with %q, want %q", child.PrevCallID, want)
			}
			body := sent(t, f.server, 1)
			var system []string
			for _, b := range asList(body["system"]) {
				system = append(system, b.(map[string]any)["text"].(string))
			}
			var names []string
			for _, tl := range asList(body["tools"]) {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			wantSys, wantTools := childSys, []string{"search"}
			if tc.share {
				wantSys, wantTools = parentSys, []string{"get_weather", "get_time", "search"}
			}
			if len(system) != 1 || system[0] != wantSys || !slices.Equal(names, wantTools) {
				t.Errorf("child sent system %.40q…, tools %v; want %.40q…, %v", system, names, wantSys, wantTools)
			}
			prefix := localprovider.EstimateTokens([]byte(parentSys))
			if got := child.Usage.CacheRead; (got >= prefix) != tc.read {
				t.Errorf("child read %d tokens from cache; the parent's system alone is ~%d (read expected: %v)", got, prefix, tc.read)
			}
			if got := child.Break.ChangedDimensions; child.Break.Detected != (tc.breakDims != nil) || !slices.Equal(got, tc.breakDims) && tc.breakDims != nil {
				t.Errorf("child break %+v, want changed %v", child.Break, tc.breakDims)
			}
			if m := markers(body); tc.share && !slices.Contains(m, "system[0]:5m") {
				t.Errorf("child markers %v: the parent's system lost its marker", m)
			}
		})
	}
}

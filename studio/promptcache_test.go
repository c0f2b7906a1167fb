package studio_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/studio"
)

// TestPromptCacheRecordsSurviveARestart: a graph whose chat model has
// the Studio's prompt-cache hooks (Backends.PromptCache) records its
// calls in Postgres; a second Studio on the same database shows them in
// the thread page's prompt-cache panel, priced with Config.PromptCache.
func TestPromptCacheRecordsSurviveARestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL, _ := schemaURL(t)
	_, double := localprovider.NewTestServer(localprovider.Config{})
	t.Cleanup(double.Close)
	cfg := studio.Config{DatabaseURL: dbURL, PromptCache: promptcache.Config{Prices: map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)}},
		Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
			if b.PromptCache == nil {
				t.Fatal("Backends.PromptCache is nil")
			}
			m, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: double.URL, Model: "claude-sonnet-4-5", Hooks: b.PromptCache.Hooks()})
			if err != nil {
				return nil, err
			}
			g := engine.NewStateGraph[models.MessagesState]()
			g.AddNode("agent", func(ctx context.Context, s models.MessagesState) (engine.Output, error) {
				sys := models.System(strings.Repeat("You answer questions about the weather, briefly. ", 120))
				reply, err := models.Call(ctx, m, append([]models.Message{sys}, s.Messages...), nil)
				if err != nil {
					return nil, err
				}
				return engine.Update{"messages": reply}, nil
			})
			g.AddEdge(engine.Start, "agent")
			c, err := g.Compile(engine.CompileOptions{Checkpointer: b.Checkpointer})
			return map[string]engine.Compiled{"chat": c}, err
		}}
	first, err := studio.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Runs().Start(ctx, "chat", "pc-restart", map[string]any{"messages": "Weather in Oslo?"}, runs.StartOptions{}); err != nil {
		first.Close()
		t.Fatal(err)
	}
	if th, err := first.Runs().Wait(ctx, "pc-restart"); err != nil || th.Status != runs.StatusIdle {
		first.Close()
		t.Fatalf("first Studio: %+v, %v", th, err)
	}
	first.Close()

	second, err := studio.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	for _, path := range []string{"/threads/pc-restart", "/threads/pc-restart/promptcache"} {
		rec := httptest.NewRecorder()
		second.Handler().ServeHTTP(rec, pageRequest(t, path))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || strings.Count(body, `class="pc-call`) != 1 || !strings.Contains(body, "anthropic/claude-sonnet-4-5") ||
			strings.Contains(body, `<span class="pc-t-cost">$0.0000</span>`) {
			t.Fatalf("GET %s after a restart = %d; want the call, priced, in the panel: %.3000s", path, rec.Code, body)
		}
	}
}

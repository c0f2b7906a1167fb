package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/studio"
)

// TestOfflineCVEAgentShowsPromptCacheRecords is `go run ./cmd/studio`
// with no key, running cve-agent's example input: the offline model runs
// with the Studio's prompt-cache hooks, so the thread page's panel lists
// every agent call (its node named as the drawing names it) with cache
// reads from the second call on, no break, priced; and the chat still
// badges the replies offline.
func TestOfflineCVEAgentShowsPromptCacheRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The model main picks with no key in the environment.
	offlineOnly := func(h models.Hooks) modelenv.Config {
		c := modelConfig(h)
		c.Getenv = func(string) string { return "" }
		return c
	}
	s, err := studio.Open(ctx, studio.Config{Build: graphs(offlineOnly), Inputs: inputs(), PromptCache: promptCacheConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Runs().Start(ctx, examples.CVEAgent, "cve-offline", inputs()[examples.CVEAgent], runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th, err := s.Runs().Wait(ctx, "cve-offline"); err != nil || th.Status != runs.StatusInterrupted {
		t.Fatalf("cve-agent: %+v, %v; want its review interrupt", th, err)
	}
	recs, err := s.Persistence().PromptCache.Records(ctx, "cve-offline")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) < 2 {
		t.Fatalf("%d records; want every agent call", len(recs))
	}
	for i, r := range recs {
		if r.Provider != "anthropic" || r.Model != modelenv.OfflineModel || r.Break.Detected || r.Error != "" || r.CostUSD <= 0 {
			t.Errorf("call %d: %+v", i, r)
		}
		if i > 0 && r.Usage.CacheRead == 0 {
			t.Errorf("call %d read nothing from the cache: %+v", i, r.Usage)
		}
	}
	rec := httptest.NewRecorder()
	page := httptest.NewRequest(http.MethodGet, "/threads/cve-offline", nil)
	page.Header.Set("Accept", "text/html") // a browser's request: the page, not the API's thread
	s.Handler().ServeHTTP(rec, page)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || strings.Count(body, `class="pc-call`) != len(recs) || !strings.Contains(body, `<code class="pc-node">analyst:agent</code>`) ||
		!strings.Contains(body, "offline model") {
		t.Fatalf("thread page = %d; want %d calls of analyst:agent in the panel and offline replies: %.3000s", rec.Code, len(recs), body)
	}
}

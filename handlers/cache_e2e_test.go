package handlers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/examples/cachedlookup"
	"github.com/superstep-dev/superstep/internal/e2e"
)

// A person runs the cached-lookup graph from its page, finds the lookup's
// cached entry on the cache page, clears that node, and sees it gone.
func TestE2ECachePageShowsAndClearsANodesEntries(t *testing.T) {
	t.Parallel()
	f, c := setupCache(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/cached-lookup"),
		chromedp.WaitReady(chromedp.ID("start")),
		chromedp.SetValue(chromedp.CSS(`input[name="thread"]`), "e2e-cache"),
		chromedp.SetValue(chromedp.CSS(`textarea[name="input"]`), `{"pair": "EUR/USD", "amount": 10}`),
		chromedp.Click(chromedp.ID("start")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the run finished", `body[data-status="idle"][data-live="1"]`)
	f.wait(t, "e2e-cache")
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/cache")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the lookup's cached entry", `section.cache-node tr.cache-entry`)
	heading, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`section.cache-node h2`)))
	if err != nil || !strings.Contains(heading, cachedlookup.NodeLookupRate) || !strings.Contains(heading, "1 entries") {
		t.Fatalf("cache node heading = %q, %v; want %s with 1 entry", heading, err, cachedlookup.NodeLookupRate)
	}
	ttl, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr.cache-entry td.ttl`)))
	if err != nil || ttl == "" || ttl == "no expiry" {
		t.Errorf("TTL cell = %q, %v; want the time left of a %v TTL", ttl, err, cachedlookup.RateTTL)
	}
	screenshot(t, ctx, "cache-page.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.clear-node`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the cleared notice", `#cache-cleared`)
	waitFor(t, ctx, "the empty cache", `#cache-empty`)
	if left, err := c.List(context.Background(), "", 0); err != nil || len(left) != 0 {
		t.Errorf("after clearing, the cache holds %d entries (%v)", len(left), err)
	}
}

package handlers_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/internal/e2e"
)

// A person puts three notes through the store page's form, then searches
// with a paraphrase of one of them: that note comes first, with a score.
func TestE2EStorePutAndSemanticSearch(t *testing.T) {
	t.Parallel()
	f := storeSetup(t, memoryStore(t))
	ctx := e2e.Browser(t)
	notes := []struct{ key, value string }{
		{"cat", `{"text": "The cat sleeps on the warm windowsill"}`},
		{"revenue", `{"text": "Quarterly revenue grew by ten percent"}`},
		{"bread", `{"text": "How to bake sourdough bread in your oven"}`},
	}
	for _, n := range notes {
		if err := chromedp.Do(ctx,
			chromedp.Navigate(f.srv.URL+"/store"),
			chromedp.WaitReady(chromedp.ID("put-form")),
			chromedp.SetValue(chromedp.CSS(`#put-form input[name="namespace"]`), "notes.team"),
			chromedp.SetValue(chromedp.CSS(`#put-form input[name="key"]`), n.key),
			chromedp.SetValue(chromedp.CSS(`#put-form textarea[name="value"]`), n.value),
			chromedp.Click(chromedp.ID("put")),
		); err != nil {
			t.Fatal(err)
		}
		// The item page replaces the store page: the value is read in
		// the page at the moment it shows, never through a node found
		// before the navigation ended (stale under load).
		waitFor(t, ctx, "the stored item "+n.key, `#item-value`)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := chromedp.Run(pctx, chromedp.Poll[bool](`(document.getElementById("item-value")?.textContent ?? "").includes('"text":')`))
		cancel()
		if err != nil {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("item-value")?.textContent ?? "(no item-value)"`))
			t.Fatalf("item %s shows %q, %v", n.key, text, err)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/store"),
		chromedp.WaitReady(chromedp.ID("search-form")),
		chromedp.SetValue(chromedp.CSS(`#search-form input[name="ns"]`), "notes"),
		chromedp.SetValue(chromedp.CSS(`#search-form input[name="q"]`), "company earnings increased"),
		chromedp.Click(chromedp.ID("search")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the search results", `#store-items tbody tr.store-item`)
	screenshot(t, ctx, "store-search.png")
	key, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#store-items tbody tr.store-item:first-child td.key`)))
	if err != nil || key != "revenue" {
		t.Fatalf("first result = %q, %v; want revenue", key, err)
	}
	score, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#store-items tbody tr.store-item:first-child td.score`)))
	if err != nil {
		t.Fatal(err)
	}
	if s, perr := strconv.ParseFloat(score, 64); perr != nil || s <= 0 || s > 1 {
		t.Fatalf("first result's score = %q; want a similarity in (0, 1]", score)
	}
}

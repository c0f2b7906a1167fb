package studio_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/internal/e2e"
)

// TestE2ETakeoverShowsOnThePage: a run held on replica A, a tab on
// replica B. A stops (handing the run back); B takes the run over and
// finishes it. The tab shows the run go on, its title saying it was taken
// over and when, and a reload shows the same page.
func TestE2ETakeoverShowsOnThePage(t *testing.T) {
	t.Parallel()
	const thread = "taken-over"
	a, b, entered, release := heldRun(t, thread)
	wait := func(what string) {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}

	tab := e2e.Browser(t)
	if err := chromedp.Do(tab, chromedp.Navigate(b.srv.URL+"/threads/"+thread)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the page on B, live and running", `body[data-live="1"][data-status="running"]`)
	before, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("current-run").textContent.trim()`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(before, "taken over") {
		t.Fatalf("before any takeover the run's title is %q", before)
	}

	a.s.Close() // SIGTERM with no grace: the run is handed back at once
	a.srv.Close()
	wait("B never took the run over")
	waitFor(t, tab, "the takeover on the page", `body[data-status="running"] #current-run`)
	deadline := time.Now().Add(20 * time.Second)
	var title string
	for !strings.Contains(title, "taken over at") {
		if time.Now().After(deadline) {
			t.Fatalf("the run's title is %q; want it to say the run was taken over", title)
		}
		time.Sleep(50 * time.Millisecond)
		if title, err = chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById("current-run").textContent.trim()`)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(title, before) || !strings.HasSuffix(title, "UTC (attempt 2)") {
		t.Fatalf("the run's title after the takeover is %q; want %q then when it was taken over, attempt 2", title, before)
	}

	release()
	waitFor(t, tab, "the run's end on B", `body[data-status="idle"][data-runs="1"]`)
	live, err := chromedp.Run(tab, chromedp.Evaluate[string](pageSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	var page threadPageShows
	if err := json.Unmarshal([]byte(live), &page); err != nil {
		t.Fatal(err)
	}
	if page.Run != title || len(page.Timeline) < 5 {
		t.Fatalf("after the run the page shows %s; want the run titled %q with its tasks", live, title)
	}
	if err := chromedp.Do(tab, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the page reloaded, live", `body[data-live="1"][data-status="idle"]`)
	reloaded, err := chromedp.Run(tab, chromedp.Evaluate[string](pageSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	samePage(t, "the live page", live, "the reloaded page", reloaded)
}

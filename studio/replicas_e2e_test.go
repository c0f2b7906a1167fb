package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/studio"
)

type relayState struct {
	Log []string `json:"log" reduce:"append"`
}

// slowNode is how long each of relayGraph's nodes after the first takes:
// long enough that a tab hears a run's events spread out in time, with
// room for a loaded machine's delays between replicas.
const slowNode = 300 * time.Millisecond

// relayGraph holds its first node until release is closed (entered says
// it got there), then runs a fan-out of two slow nodes, a join and a
// last node, each taking a while: a run of several supersteps whose
// events come spread out in time.
func relayGraph(b studio.Backends, entered chan<- struct{}, release <-chan struct{}) (engine.Compiled, error) {
	slow := func(name string) func(context.Context, relayState) (engine.Output, error) {
		return func(ctx context.Context, _ relayState) (engine.Output, error) {
			select {
			case <-time.After(slowNode):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return engine.Set("log", name), nil
		}
	}
	sg := engine.NewStateGraph[relayState]()
	sg.AddNode("hold", func(ctx context.Context, _ relayState) (engine.Output, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return engine.Set("log", "hold"), nil
	})
	for _, n := range []string{"left", "right", "join", "last"} {
		sg.AddNode(n, slow(n))
	}
	sg.AddEdge(engine.Start, "hold").AddEdge("hold", "left").AddEdge("hold", "right").
		AddEdge("left", "join").AddEdge("right", "join").AddEdge("join", "last").AddEdge("last", engine.End)
	return sg.Compile(engine.CompileOptions{Checkpointer: b.Checkpointer})
}

// replica is one Studio process of the test, served over HTTP.
type replica struct {
	s   *studio.Studio
	srv *httptest.Server
}

// openReplica opens a Studio process of the test on dbURL, serving the
// relay graph, until the test ends (or close is called).
func openReplica(t *testing.T, dbURL, id string, entered chan<- struct{}, release <-chan struct{}) replica {
	t.Helper()
	s, err := studio.Open(context.Background(), studio.Config{DatabaseURL: dbURL, Runs: studio.RunsConfig{ID: id},
		Build: func(b studio.Backends) (map[string]engine.Compiled, error) {
			g, err := relayGraph(b, entered, release)
			return map[string]engine.Compiled{"relay": g}, err
		}})
	if err != nil {
		t.Fatalf("open replica %s: %v", id, err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return replica{s: s, srv: srv}
}

// runsHealth is the "runs" object of an authenticated /healthz.
type runsHealth struct {
	Replica   string `json:"replica"`
	Active    int    `json:"active"`
	Waiting   int    `json:"waiting"`
	Executing int    `json:"executing"`
	Workers   int    `json:"workers"`
}

// health reads r's /healthz. The Studios of this test have no token, so
// every caller is authenticated and sees the run queue.
func (r replica) health(t *testing.T) runsHealth {
	t.Helper()
	res, err := http.Get(r.srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var got struct {
		Status string      `json:"status"`
		Runs   *runsHealth `json:"runs"`
	}
	if err := json.Unmarshal(body, &got); err != nil || res.StatusCode != http.StatusOK || got.Status != "ok" || got.Runs == nil {
		t.Fatalf("GET %s/healthz = %d %s (%v); want ok with the runs", r.srv.URL, res.StatusCode, body, err)
	}
	return *got.Runs
}

// tabHook records, in the page, every event the page's script applies
// (studio.js dispatches each one it received over its websocket as a
// studio:event), without its per-process seq, with the tab's clock.
const tabHook = `(() => {
  window.__seen = [];
  document.addEventListener("studio:event", (e) => {
    const ev = Object.assign({}, e.detail);
    delete ev.seq;
    window.__seen.push({at: Date.now(), ev: JSON.stringify(ev), kind: ev.kind, step: ev.step, node: ev.node || "", status: ev.status || ""});
  });
  return true;
})()`

// seenEvent is one event a tab's hook recorded.
type seenEvent struct {
	At     float64 `json:"at"`
	Ev     string  `json:"ev"`
	Kind   string  `json:"kind"`
	Step   int     `json:"step"`
	Node   string  `json:"node"`
	Status string  `json:"status"`
}

func (e seenEvent) String() string { return fmt.Sprintf("%s/%d/%s", e.Kind, e.Step, e.Node) }

// pageSnapshot is what a thread page shows of the thread's runs, read
// through the page's script at the moment of reading: the status, the
// run's title, each timeline row's cells, earlier runs, the values and
// the channel versions.
const pageSnapshot = `JSON.stringify({
  status: document.getElementById("status").textContent.trim(),
  dataStatus: document.body.dataset.status,
  run: document.getElementById("current-run").textContent.trim(),
  timeline: Array.from(document.querySelectorAll("#timeline tr")).map((r) => r.className.replace(/\s+/g, " ").trim() + ": " + Array.from(r.cells).map((c) => c.textContent.trim()).join(" | ")),
  earlier: Array.from(document.querySelectorAll("#earlier-runs details.run")).map((d) => d.querySelector("summary").textContent.trim()),
  values: Array.from(document.querySelectorAll("#values tr")).map((r) => r.id + ": " + Array.from(r.cells).map((c) => c.textContent.trim()).join(" | ")),
  channels: Array.from(document.querySelectorAll("#channels tr")).map((r) => r.id + ": " + (r.cells[1] ? r.cells[1].textContent.trim() : "")),
})`

// TestE2ETwoReplicasTwoTabsOneRun: two Studio replicas share one
// database; a tab on each shows the same thread. One run, started
// through replica A's API and executed by A, reaches both tabs live,
// event for event in the same order, to its end; both pages then show
// the same timeline, values and status, and so does tab 2 once
// reloaded. While the run goes on, A's /healthz says it executes it
// and B's says it does not; afterwards neither does.
func TestE2ETwoReplicasTwoTabsOneRun(t *testing.T) {
	t.Parallel()
	const thread = "two-tabs"
	a, b, _, release := heldRun(t, thread)

	// The run is held in its first node, on A.
	if h := a.health(t); h.Replica != "replica-a" || h.Active != 1 || h.Executing != 1 || h.Waiting != 0 || h.Workers <= 0 {
		t.Errorf("A's /healthz runs while A executes the run = %+v; want replica-a, active 1, executing 1, waiting 0, workers > 0", h)
	}
	if h := b.health(t); h.Replica != "replica-b" || h.Active != 1 || h.Executing != 0 || h.Waiting != 0 {
		t.Errorf("B's /healthz runs while A executes the run = %+v; want replica-b, active 1, executing 0, waiting 0", h)
	}

	tab1 := e2e.Browser(t)
	tab2, closeTab2 := chromedp.NewContext(tab1) // a second tab of the same browser
	t.Cleanup(closeTab2)
	tabs := []struct {
		name string
		ctx  context.Context
		url  string
	}{{"tab 1 (on A)", tab1, a.srv.URL}, {"tab 2 (on B)", tab2, b.srv.URL}}
	for _, tab := range tabs {
		if err := chromedp.Do(tab.ctx, chromedp.Navigate(tab.url+"/threads/"+thread)); err != nil {
			t.Fatalf("%s: %v", tab.name, err)
		}
		waitFor(t, tab.ctx, tab.name+": the page, live and running", `body[data-live="1"][data-status="running"]`)
		if ok, err := chromedp.Run(tab.ctx, chromedp.Evaluate[bool](tabHook)); err != nil || !ok {
			t.Fatalf("%s: hook the page's events: %v", tab.name, err)
		}
	}

	release()
	for _, tab := range tabs {
		waitFor(t, tab.ctx, tab.name+": the run's end", `body[data-status="idle"][data-runs="1"]`)
	}
	seen := make([][]seenEvent, len(tabs))
	shown := make([]string, len(tabs))
	for i, tab := range tabs {
		raw, err := chromedp.Run(tab.ctx, chromedp.Evaluate[string](`JSON.stringify(window.__seen)`))
		if err != nil {
			t.Fatalf("%s: read its events: %v", tab.name, err)
		}
		if err := json.Unmarshal([]byte(raw), &seen[i]); err != nil {
			t.Fatalf("%s: events %s: %v", tab.name, raw, err)
		}
		if shown[i], err = chromedp.Run(tab.ctx, chromedp.Evaluate[string](pageSnapshot)); err != nil {
			t.Fatalf("%s: read the page: %v", tab.name, err)
		}
	}

	t.Logf("each tab received %d live events: %v", len(seen[0]), seen[0])
	// Both tabs got the same events, in the same order, and the run's end.
	if fmt.Sprint(seen[0]) != fmt.Sprint(seen[1]) {
		t.Errorf("the tabs received different events:\ntab 1 (on A): %v\ntab 2 (on B): %v", seen[0], seen[1])
	} else {
		for i := range seen[0] {
			if seen[0][i].Ev != seen[1][i].Ev {
				t.Errorf("event %d differs:\ntab 1 (on A): %s\ntab 2 (on B): %s", i, seen[0][i].Ev, seen[1][i].Ev)
			}
		}
	}
	for i, tab := range tabs {
		evs := seen[i]
		finished := map[string]int{}
		for _, e := range evs {
			if e.Kind == "task_finished" {
				finished[e.Node]++
			}
		}
		if len(evs) == 0 || evs[len(evs)-1].Kind != "run_finished" || evs[len(evs)-1].Status != "idle" {
			t.Errorf("%s: events %v; want them to end with run_finished, idle", tab.name, evs)
			continue
		}
		for _, n := range []string{"hold", "left", "right", "join", "last"} {
			if finished[n] != 1 {
				t.Errorf("%s: %d task_finished for %s in %v; want 1", tab.name, finished[n], n, evs)
			}
		}
		// Live, not a batch at the end: join and last take two
		// slowNodes after join starts, and the tab heard of join about
		// that long before the end (a batch would be heard at once).
		end := evs[len(evs)-1].At
		for _, e := range evs {
			if e.Kind == "task_started" && e.Node == "join" {
				if want := float64(slowNode.Milliseconds()); end-e.At < want {
					t.Errorf("%s heard join start %.0f ms before the run's end; want >= %.0f ms (live events)", tab.name, end-e.At, want)
				}
			}
		}
	}

	// Both pages show the same.
	var page threadPageShows
	if err := json.Unmarshal([]byte(shown[0]), &page); err != nil {
		t.Fatal(err)
	}
	if page.Status != "idle" || page.DataStatus != "idle" || len(page.Timeline) < 5 || len(page.Values) == 0 {
		t.Errorf("tab 1 (on A) shows %s; want the run idle with its tasks and values", shown[0])
	}
	// B's page gets the details of the tasks planned before its tab
	// opened (the triggers column) from the event log: following the
	// thread, B's hub takes in the run's earlier events first
	// (runs.Manager.follow). Without that, tab 2 lacked "branch:to:hold".
	samePage(t, "tab 1 (on A)", shown[0], "tab 2 (on B)", shown[1])

	// The run is over: no replica executes it any more (the lease is
	// released just after the end is published, so wait for it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		ha, hb := a.health(t), b.health(t)
		if ha.Executing == 0 && ha.Active == 0 && hb.Executing == 0 && hb.Active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the run: A's /healthz runs %+v, B's %+v; want active 0 and executing 0 on both", ha, hb)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A reloaded page shows what the live page showed.
	if err := chromedp.Do(tab2, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab2, "tab 2 reloaded, live", `body[data-live="1"][data-status="idle"]`)
	reloaded, err := chromedp.Run(tab2, chromedp.Evaluate[string](pageSnapshot))
	if err != nil {
		t.Fatal(err)
	}
	samePage(t, "tab 2 (on B) live", shown[1], "tab 2 (on B) reloaded", reloaded)
}

// threadPageShows is what pageSnapshot reads.
type threadPageShows struct {
	Status     string   `json:"status"`
	DataStatus string   `json:"dataStatus"`
	Run        string   `json:"run"`
	Timeline   []string `json:"timeline"`
	Earlier    []string `json:"earlier"`
	Values     []string `json:"values"`
	Channels   []string `json:"channels"`
}

// samePage fails the test unless two pageSnapshot readings are the
// same, saying which parts (and rows) differ.
func samePage(t *testing.T, xName, x, yName, y string) {
	t.Helper()
	if x == y {
		return
	}
	var px, py threadPageShows
	if err := json.Unmarshal([]byte(x), &px); err != nil {
		t.Fatalf("%s: %s: %v", xName, x, err)
	}
	if err := json.Unmarshal([]byte(y), &py); err != nil {
		t.Fatalf("%s: %s: %v", yName, y, err)
	}
	part := func(what string, a, b []string) {
		if len(a) != len(b) {
			t.Errorf("%s shows %d %s, %s %d:\n%s: %q\n%s: %q", xName, len(a), what, yName, len(b), xName, a, yName, b)
			return
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s row %d differs:\n%s: %q\n%s: %q", what, i, xName, a[i], yName, b[i])
			}
		}
	}
	part("status", []string{px.Status, px.DataStatus}, []string{py.Status, py.DataStatus})
	part("run title", []string{px.Run}, []string{py.Run})
	part("timeline", px.Timeline, py.Timeline)
	part("earlier runs", px.Earlier, py.Earlier)
	part("values", px.Values, py.Values)
	part("channels", px.Channels, py.Channels)
}

// waitFor waits until the tab has an element matching sel, failing with
// the page's body otherwise.
func waitFor(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		t.Fatalf("waiting for %s (%s): %v\npage: %.3000s", what, sel, err, html)
	}
}

// heldRun opens replicas A and B on one new schema, starts thread's run
// of "relay" through A's API and waits until the run holds in its first
// node, on A. release lets the node go on (the test's end does, if the
// test did not); entered receives whenever a replica enters the node.
func heldRun(t *testing.T, thread string) (a, b replica, entered <-chan struct{}, release func()) {
	t.Helper()
	dbURL, _ := schemaURL(t)
	in := make(chan struct{}, 1)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	a, b = openReplica(t, dbURL, "replica-a", in, gate), openReplica(t, dbURL, "replica-b", in, gate)
	res, err := http.Post(a.srv.URL+"/threads/"+thread+"/runs", "application/json",
		strings.NewReader(`{"assistant_id":"relay","input":{"log":["go"]},"if_not_exists":"create"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /threads/%s/runs on A = %d %s", thread, res.StatusCode, body)
	}
	select {
	case <-in:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never reached its first node on A")
	}
	return a, b, in, release
}

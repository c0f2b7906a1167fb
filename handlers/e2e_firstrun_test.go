package handlers_test

// End-to-end tests for issue 14's "readable values" and "the first run just
// works" items: 1 (values wrap in their cell), 17 (example inputs, Try
// it), 18 (styled error pages that keep input), 19 (store delete and put
// options), 20 (400 px layout and dark mode).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/store"
)

// serveAll serves every Studio page (graphs, threads, store, cache) over
// graphs with their example inputs, as studio.Open does.
func serveAll(t testing.TB, graphs map[string]engine.Compiled, inputs map[string]map[string]any, st store.Store) *fixture {
	t.Helper()
	m, err := runs.NewManager(graphs)
	if err != nil {
		t.Fatal(err)
	}
	c := cache.NewMemory(nil)
	r := chi.NewRouter()
	r.Method(http.MethodGet, "/", handlers.Index{Backends: handlers.Backends{Checkpoints: "memory", Store: "memory", Cache: "memory"}})
	handlers.Routes{Runs: m, Store: st, Cache: c, Inputs: inputs}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
		_ = c.Close()
	})
	return &fixture{srv: srv, runs: m}
}

// bigState has a value of 1.8 MB (one JSON line) and a long string with
// no place to break.
type bigState struct {
	Big  string `json:"big"`
	Long string `json:"long"`
	Note string `json:"note"`
}

const (
	bigValueBytes = 1_800_000
	longWordBytes = 6_000
)

func bigGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[bigState]()
	sg.AddNode("fill", func(context.Context, bigState) (engine.Output, error) {
		return engine.Update{"big": strings.Repeat("0123456789abcdef", bigValueBytes/16), "long": strings.Repeat("x", longWordBytes), "note": "short"}, nil
	})
	sg.AddEdge(engine.Start, "fill").AddEdge("fill", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// pageWidth is the document's scroll width and the window's width.
func pageWidth(t *testing.T, ctx context.Context) (doc, win int) {
	t.Helper()
	w, err := chromedp.Run(ctx, chromedp.Evaluate[[2]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
	if err != nil {
		t.Fatal(err)
	}
	return w[0], w[1]
}

// Item 1: in a 1,400 px window a very long value wraps and scrolls inside
// its cell, before and after "Show all of it" fetched all 1.8 MB of it;
// the page never gets wider than the window.
func TestE2ELongValuesWrapAndScrollInTheirCell(t *testing.T) {
	t.Parallel()
	f := serve(t, map[string]engine.Compiled{"big": bigGraph(t)})
	if _, err := f.runs.Start(context.Background(), "big", "big-1", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "big-1")
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(1400, 900),
		chromedp.Navigate(f.srv.URL+"/threads/big-1"),
		chromedp.WaitReady(chromedp.CSS(`#v-big a.expand`)),
	); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if doc, win := pageWidth(t, ctx); win != 1400 || doc > win {
			t.Errorf("%s: the page is %d px wide in a %d px window", when, doc, win)
		}
		// Each value's box wraps its text: nothing sticks out sideways.
		for _, key := range []string{"big", "long"} {
			box, err := chromedp.Run(ctx, chromedp.Evaluate[[4]int](fmt.Sprintf(
				`(() => { const p = document.getElementById("vp-%s"), c = p.closest("td").getBoundingClientRect();
				  return [p.scrollWidth, p.clientWidth, Math.round(c.right), p.textContent.length]; })()`, key)))
			if err != nil {
				t.Fatal(err)
			}
			if box[0] > box[1] || box[2] > 1400 {
				t.Errorf("%s: value %s is %d px of text in a %d px box, its cell ends at %d px", when, key, box[0], box[1], box[2])
			}
		}
	}
	check("preview")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#v-big a.expand`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the whole value", `#vp-big[data-expanded="1"]`)
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("vp-big").textContent.length`))
	if err != nil || n < bigValueBytes {
		t.Fatalf("the expanded value has %d characters (%v), want all %d", n, err, bigValueBytes)
	}
	check("expanded")
	// The cell scrolls: the value is taller than its box, which scrolls.
	sc, err := chromedp.Run(ctx, chromedp.Evaluate[[2]int](`(() => { const p = document.getElementById("vp-big"); p.scrollTop = 500; return [p.scrollHeight - p.clientHeight, p.scrollTop]; })()`))
	if err != nil || sc[0] <= 0 || sc[1] != 500 {
		t.Errorf("the expanded value's box does not scroll: overflow %d px, scrollTop %d (%v)", sc[0], sc[1], err)
	}
	screenshot(t, ctx, "long-values.png")
}

// Item 17: the graph page's start form holds the example's input (not
// zero values) and the form's recursion limit is 25, with the reason next
// to it; "Try it" starts the example on a new thread at once, and the run
// reaches its interrupt.
func TestE2ETryItRunsTheExampleInput(t *testing.T) {
	t.Parallel()
	all, err := examples.All(examples.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	inputs := examples.Inputs()
	f := serveAll(t, map[string]engine.Compiled{examples.TransferApproval: all[examples.TransferApproval], examples.MapReduce: all[examples.MapReduce]},
		inputs, memoryStore(t))
	ctx := e2e.Browser(t)
	for _, tc := range []struct {
		graph, wantText, wantStatus string
	}{
		{examples.TransferApproval, `"request": "Please send 2,500 to Alice Martin`, "interrupted"},
		{examples.MapReduce, `"document": "## Plan`, "idle"},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/graphs/"+tc.graph), chromedp.WaitReady(chromedp.ID("try-it"))); err != nil {
			t.Fatal(err)
		}
		input, err := formValue(ctx, `#start-form textarea[name="input"]`)
		if err != nil || !strings.Contains(input, tc.wantText) {
			t.Fatalf("%s: the start form holds %q (%v), want the example input with %s", tc.graph, input, err, tc.wantText)
		}
		limit, err := formValue(ctx, `#start-form input[name="recursion_limit"]`)
		if err != nil || limit != "25" {
			t.Errorf("%s: recursion limit prefilled %q (%v), want 25", tc.graph, limit, err)
		}
		note, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("recursion-note")))
		if err != nil || !strings.Contains(note, "25") || !strings.Contains(note, "10007") || !strings.Contains(note, "LangGraph Studio") {
			t.Errorf("%s: the note next to the limit says %q (%v)", tc.graph, note, err)
		}
		if tc.graph == examples.TransferApproval {
			screenshot(t, ctx, "graph-page-try-it.png")
		}
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("try-it"))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, tc.graph+" run reached "+tc.wantStatus, `body[data-graph="`+tc.graph+`"][data-live="1"][data-status="`+tc.wantStatus+`"]`)
		id, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("body"), "data-thread"))
		if err != nil || id.Value == "" {
			t.Fatalf("%s: no thread id on the thread page (%v)", tc.graph, err)
		}
		th, err := f.runs.Thread(context.Background(), id.Value)
		if err != nil || th.Error != "" {
			t.Fatalf("%s: thread %s: %+v, %v", tc.graph, id.Value, th, err)
		}
	}
	// Two tries are two threads.
	if ts := f.list(t, runs.ThreadFilter{}); len(ts) != 2 {
		t.Errorf("%d threads after two tries, want 2", len(ts))
	}
}

// Item 18: unknown pages (and unknown static files) get the Studio's own
// styled 404 with a way back; the favicon is linked and served.
func TestE2EUnknownPagesGetTheStudios404AndAFavicon(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := e2e.Browser(t)
	for _, path := range []string{"/no/such/page", "/static/nope.js", "/graphs/ghost"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+path), chromedp.WaitReady(chromedp.ID("error-message"))); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[4]string](`[document.body.dataset.statusCode, document.querySelector("h1").textContent,
			getComputedStyle(document.querySelector("nav.top")).display, document.getElementById("error-back").getAttribute("href")]`))
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != "404" || !strings.Contains(got[1], "Not found") || got[2] != "flex" || got[3] == "" {
			t.Errorf("%s: status %s, heading %q, nav display %q (stylesheet applied?), back link %q", path, got[0], got[1], got[2], got[3])
		}
	}
	// A 404 reached from a Studio page links back to that page.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/flow"),
		chromedp.WaitReady(chromedp.ID("start")),
		chromedp.Evaluate[chromedp.Void](`(() => { const a = document.createElement("a"); a.id = "stray"; a.href = "/graphs/flow/oops"; a.textContent = "x"; document.body.append(a); })()`),
		chromedp.Click(chromedp.ID("stray")),
		chromedp.WaitReady(chromedp.ID("error-back")),
	); err != nil {
		t.Fatal(err)
	}
	back, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("error-back"), "href"))
	if err != nil || back.Value != "/graphs/flow" {
		t.Errorf("the 404's way back is %q (%v), want the page the person came from, /graphs/flow", back.Value, err)
	}
	screenshot(t, ctx, "not-found.png")
	icon, err := chromedp.Run(ctx, chromedp.Evaluate[[2]string](`[document.querySelector('link[rel="icon"]').getAttribute("href"), ""]`))
	if err != nil || icon[0] != "/static/favicon.svg" {
		t.Errorf("the layout links icon %q (%v)", icon[0], err)
	}
	for _, p := range []string{"/favicon.ico", "/static/favicon.svg"} {
		res, err := http.Get(f.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("%s = %d %s, want the SVG icon", p, res.StatusCode, res.Header.Get("Content-Type"))
		}
	}
}

// Item 18: a refused start keeps what was typed. A 400 re-renders the
// form with the text and the reason; an input too large to send is
// refused in the page, with the text kept; and when a too-large body does
// reach the server, its 413 page is styled and links back to the form.
func TestE2EStartFormErrorsKeepTheInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := e2e.Browser(t)
	bad := `{"log": ["typed by hand"], "n": oops}`
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/flow"),
		chromedp.WaitReady(chromedp.ID("start")),
		chromedp.SetValue(chromedp.CSS(`#start-form textarea[name="input"]`), bad),
		chromedp.Click(chromedp.ID("start")),
		chromedp.WaitReady(chromedp.ID("form-error")),
	); err != nil {
		t.Fatal(err)
	}
	kept, err := formValue(ctx, `#start-form textarea[name="input"]`)
	if err != nil || kept != bad {
		t.Errorf("after the 400 the form holds %q (%v), want what was typed", kept, err)
	}

	// Too large for one request: the page refuses to send it.
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#start-form textarea[name="input"]').value = '{"log": ["' + "a".repeat(1100000) + '"]}'`),
		chromedp.Click(chromedp.ID("start")),
		chromedp.WaitVisible(chromedp.CSS(`#start-form .form-too-large`)),
	); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[3]string](`[location.pathname, document.querySelector("#start-form .form-too-large").textContent,
		String(document.querySelector('#start-form textarea[name="input"]').value.length)]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got[0], "/graphs/flow/runs") || !strings.Contains(got[1], "Not sent") || !strings.Contains(got[1], "1.0 MB") || got[2] != "1100013" {
		t.Errorf("too large: page %s, message %q, input kept %s characters", got[0], got[1], got[2])
	}
	screenshot(t, ctx, "form-too-large.png")

	// Sent anyway (form.submit() skips the page's check): the server's 413
	// page is the Studio's, and links back to the form.
	if err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("start-form").submit()`),
		chromedp.WaitReady(chromedp.CSS(`body[data-status-code="413"] #error-back`)),
	); err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[[3]string](`[document.querySelector("h1").textContent, document.getElementById("error-message").textContent,
		document.getElementById("error-back").getAttribute("href")]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page[0], "Too large") || !strings.Contains(page[1], "1 MiB") || page[2] != "/graphs/flow" {
		t.Errorf("413 page: heading %q, message %q, back to %q", page[0], page[1], page[2])
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("error-back")), chromedp.WaitReady(chromedp.ID("start"))); err != nil {
		t.Fatalf("following the 413 page's link back: %v", err)
	}
}

// recordingStore remembers the PutOps that reach the store.
type recordingStore struct {
	store.Store
	mu   sync.Mutex
	puts []store.PutOp
}

func (s *recordingStore) Batch(ctx context.Context, ops []store.Op) ([]store.Result, error) {
	s.mu.Lock()
	for _, op := range ops {
		if p, ok := op.(store.PutOp); ok {
			s.puts = append(s.puts, p)
		}
	}
	s.mu.Unlock()
	return s.Store.Batch(ctx, ops)
}

func (s *recordingStore) lastPut() store.PutOp {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.puts) == 0 {
		return store.PutOp{}
	}
	return s.puts[len(s.puts)-1]
}

// Item 19: the put form's TTL (minutes) and index choice reach the
// store's put; deleting asks first: one click leaves the item, confirming
// deletes it.
func TestE2EStorePutOptionsAndConfirmedDelete(t *testing.T) {
	t.Parallel()
	st := &recordingStore{Store: memoryStore(t)}
	f := storeSetup(t, st)
	ctx := e2e.Browser(t)
	put := func(key, ttl, index, paths string) {
		t.Helper()
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(f.srv.URL + "/store"),
			chromedp.WaitReady(chromedp.ID("put-form")),
			chromedp.SetValue(chromedp.CSS(`#put-form input[name="namespace"]`), "notes.team"),
			chromedp.SetValue(chromedp.CSS(`#put-form input[name="key"]`), key),
			chromedp.SetValue(chromedp.CSS(`#put-form textarea[name="value"]`), `{"text": "Quarterly revenue grew", "tags": ["finance"]}`),
			chromedp.SetValue(chromedp.ID("put-index"), index),
		}
		// The fields start empty (chromedp cannot set an empty value).
		if ttl != "" {
			steps = append(steps, chromedp.SetValue(chromedp.ID("put-ttl"), ttl))
		}
		if paths != "" {
			steps = append(steps, chromedp.SetValue(chromedp.ID("put-index-paths"), paths))
		}
		steps = append(steps, chromedp.Click(chromedp.ID("put")), chromedp.WaitReady(chromedp.ID("item-value")))
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	put("brief", "90", "paths", "text, tags[*]")
	if p := st.lastPut(); p.Key != "brief" || p.TTL != 90*time.Minute || strings.Join(p.Index, "|") != "text|tags[*]" {
		t.Errorf("put reached the store as key %q, TTL %v, index %q; want 90m and [text tags[*]]", p.Key, p.TTL, p.Index)
	}
	put("quiet", "1.5", "none", "")
	if p := st.lastPut(); p.Key != "quiet" || p.TTL != 90*time.Second || p.Index == nil || len(p.Index) != 0 {
		t.Errorf("put reached the store as key %q, TTL %v, index %#v; want 1m30s and no index", p.Key, p.TTL, p.Index)
	}
	put("plain", "", "default", "")
	if p := st.lastPut(); p.Key != "plain" || p.TTL != 0 || p.Index != nil {
		t.Errorf("put reached the store as key %q, TTL %v, index %#v; want the store's defaults", p.Key, p.TTL, p.Index)
	}
	// A bad path is refused with the form kept.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/store"),
		chromedp.WaitReady(chromedp.ID("put-form")),
		chromedp.SetValue(chromedp.CSS(`#put-form input[name="namespace"]`), "notes.team"),
		chromedp.SetValue(chromedp.CSS(`#put-form input[name="key"]`), "odd"),
		chromedp.SetValue(chromedp.CSS(`#put-form textarea[name="value"]`), `{"text": "x"}`),
		chromedp.SetValue(chromedp.ID("put-index"), "paths"),
		chromedp.SetValue(chromedp.ID("put-index-paths"), "text[[["),
		chromedp.Click(chromedp.ID("put")),
		chromedp.WaitReady(chromedp.ID("form-error")),
	); err != nil {
		t.Fatal(err)
	}
	if v, err := formValue(ctx, `#put-index-paths`); err != nil || v != "text[[[" {
		t.Errorf("after a refused put the paths field holds %q (%v)", v, err)
	}

	exists := func() bool {
		it, err := store.Get(context.Background(), st, []string{"notes", "team"}, "brief")
		if err != nil {
			t.Fatal(err)
		}
		return it != nil
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/store/item?ns=notes.team&key=brief"),
		chromedp.WaitReady(chromedp.ID("delete")),
		chromedp.Click(chromedp.ID("delete")),
		chromedp.WaitVisible(chromedp.ID("confirm-delete")),
	); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("one click on Delete deleted the item")
	}
	screenshot(t, ctx, "store-confirm-delete.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-delete")), chromedp.WaitReady(chromedp.ID("store-items"))); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatal("the confirmed delete left the item")
	}
}

// Item 20: at 400 px every page fits the window (tables and the drawing
// scroll inside their own boxes), and the pages follow the system's dark
// mode.
func TestE2ENarrowWindowAndDarkMode(t *testing.T) {
	t.Parallel()
	all, err := examples.All(examples.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	st := memoryStore(t)
	if err := store.Put(context.Background(), st, []string{"notes", "team"}, "brief", map[string]any{"text": strings.Repeat("a rather long note ", 20)}); err != nil {
		t.Fatal(err)
	}
	f := serveAll(t, map[string]engine.Compiled{examples.CVEAssessment: all[examples.CVEAssessment], examples.TransferApproval: all[examples.TransferApproval]},
		examples.Inputs(), st)
	for thread, graph := range map[string]string{"cve-1": examples.CVEAssessment, "pay-1": examples.TransferApproval} {
		if _, err := f.runs.Start(context.Background(), graph, thread, examples.Inputs()[graph], runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, thread)
	}
	pages := []struct{ path, ready string }{
		{"/", "#backends"},
		{"/graphs/" + examples.CVEAssessment, "#start-form"},
		{"/threads/cve-1", `body[data-live="1"]`},
		{"/threads/pay-1", `body[data-live="1"] #approval`},
		{"/threads", "table.threads"},
		{"/threads/cve-1/checkpoints", "#tree"},
		{"/store", "#put-form"},
		{"/store/item?ns=notes.team&key=brief", "#item-value"},
		{"/store/items?ns=notes", "#store-items"},
		{"/store/search?ns=&q=long+note", "#store-items"},
		{"/cache", "main h1"},
		{"/graphs", "#graphs"},
	}
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 800)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+p.path), chromedp.WaitReady(chromedp.CSS(p.ready))); err != nil {
			t.Fatalf("%s: %v", p.path, err)
		}
		if doc, win := pageWidth(t, ctx); win != 400 || doc > win {
			t.Errorf("%s is %d px wide in a %d px window", p.path, doc, win)
		}
		if p.path == "/threads/cve-1" {
			screenshot(t, ctx, "thread-400px.png")
		}
	}
	// The timeline is wider than the window: it scrolls in its own box.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/cve-1"), chromedp.WaitReady(chromedp.CSS(`body[data-live="1"]`))); err != nil {
		t.Fatal(err)
	}
	tl, err := chromedp.Run(ctx, chromedp.Evaluate[[3]string](`(() => { const t = document.getElementById("timeline-table"), s = getComputedStyle(t);
		return [String(t.scrollWidth > t.clientWidth), s.overflowX, String(Math.round(t.getBoundingClientRect().right))]; })()`))
	if err != nil || tl[0] != "true" || tl[1] != "auto" {
		t.Errorf("timeline: wider than its box %s, overflow-x %s, right edge %s px (%v)", tl[0], tl[1], tl[2], err)
	}

	bg := func() string {
		t.Helper()
		c, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	light := bg()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	dark := bg()
	if light != "rgb(247, 248, 250)" || dark == light || dark != "rgb(15, 20, 27)" {
		t.Errorf("body background: light %s, dark %s; want the dark palette's rgb(15, 20, 27) in dark mode", light, dark)
	}
	// Panels take the dark surface too, and text stays light on it.
	panel, err := chromedp.Run(ctx, chromedp.Evaluate[[2]string](`[getComputedStyle(document.getElementById("timeline-table")).backgroundColor, getComputedStyle(document.body).color]`))
	if err != nil || panel[0] != "rgb(24, 32, 43)" || panel[1] != "rgb(229, 231, 235)" {
		t.Errorf("dark mode: table background %s, text %s (%v)", panel[0], panel[1], err)
	}
	screenshot(t, ctx, "thread-dark-400px.png")
}

// formValue reads the value of the form field sel matches through the
// page's own DOM at the moment of reading: a node id chromedp resolved a
// moment before goes stale when the page is replaced in between (a form
// post's answer; seen in CI as "No node with given id").
func formValue(ctx context.Context, sel string) (string, error) {
	js := fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el ? el.value : null; })()`, sel)
	v, err := chromedp.Run(ctx, chromedp.Evaluate[*string](js))
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", fmt.Errorf("no element matches %s", sel)
	}
	return *v, nil
}

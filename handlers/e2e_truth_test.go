package handlers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// Issue 14, items 2, 3, 4 and 7: the thread page shows the head's own
// lineage, grouped by run; a reload shows what a live tab showed; answers
// are in the timeline; a stale approval panel is retired.

// chainGraph is START → a → b → c → d → END; each node appends its name.
func chainGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	for _, n := range []string{"a", "b", "c", "d"} {
		sg.AddNode(n, func(context.Context, flowState) (engine.Output, error) { return engine.Set("log", n), nil })
	}
	sg.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", "d").AddEdge("d", engine.End)
	return compileFlow(t, sg)
}

// truthGraph is START → ask (an interrupt) → lookup (cached) → boom and
// wait in parallel; boom fails, which cancels wait (it blocks until its
// context ends).
func truthGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[flowState]()
	sg.AddNode("lookup", func(_ context.Context, s flowState) (engine.Output, error) {
		return engine.Set("answer", fmt.Sprint("rate-", s.N)), nil
	}, engine.WithCache(engine.CachePolicy{}))
	sg.AddNode("ask", func(ctx context.Context, _ flowState) (engine.Output, error) {
		a, err := engine.Interrupt(ctx, map[string]any{"question": "Pay €2,500 to ACME?"})
		if err != nil {
			return nil, err
		}
		return engine.Set("log", fmt.Sprint("ask=", a)), nil
	})
	sg.AddNode("boom", func(context.Context, flowState) (engine.Output, error) {
		return nil, errors.New("the bank said no")
	})
	sg.AddNode("wait", func(ctx context.Context, _ flowState) (engine.Output, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	sg.AddEdge(engine.Start, "ask").AddEdge("ask", "lookup").AddEdge("lookup", "boom").AddEdge("lookup", "wait").
		AddEdge("boom", engine.End).AddEdge("wait", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), Cache: cache.NewMemory(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// timelineJS reads every timeline row of the page, earlier runs first, as
// "id|class|cell|cell…", and each run group's title.
const timelineJS = `Array.from(document.querySelectorAll("#earlier-runs summary, #current-run, #earlier-runs tr, #timeline tr")).map(el =>
  el.tagName === "TR" ? [el.id, el.className].concat(Array.from(el.cells).map(c => c.textContent.trim().replace(/\s+/g, " "))).join("|")
                      : "# " + el.textContent.trim()).join("\n")`

// channelsJS reads the channel table: each row's id, class and cells.
const channelsJS = `Array.from(document.querySelectorAll("#channels tr")).map(r => [r.id, r.className].concat(Array.from(r.cells).map(c => c.textContent.trim())).join("|")).join("\n")`

// nodesJS reads the graph's node classes.
const nodesJS = `Array.from(document.querySelectorAll("g.gnode")).map(g => g.id + "=" + g.getAttribute("class")).sort().join("\n")`

func evalString(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	return s
}

// Item 2: after a fork and a resume, the page shows the head's lineage:
// the first run (a, b, c, d) is cut at the fork (only a ran on this
// branch), the edit and the re-run follow, each collapsed above the
// current one, and no step of the abandoned branch appears or
// interleaves. A tab open during the fork moves to the new branch.
func TestE2EForkAndResumeShowTheHeadsLineage(t *testing.T) {
	t.Parallel()
	f := serve(t, map[string]engine.Compiled{"chain": chainGraph(t)})
	bg := context.Background()
	const id = "lineage"
	if _, err := f.runs.Start(bg, "chain", id, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	head := f.history(t, "chain", id)[0].Config.CheckpointID

	// Fork after a: n = 7 as if a wrote it, then resume from the new head.
	afterA := atStep(t, f.history(t, "chain", id), 1)
	if _, err := f.runs.UpdateState(bg, id, afterA, map[string]any{"n": 7}, "a"); err != nil {
		t.Fatal(err)
	}
	// The open tab follows the thread onto the new branch.
	waitFor(t, ctx, "the live tab reloaded onto the fork", `body[data-live="1"]:not([data-head="`+head+`"])`)
	if _, err := f.runs.RunFrom(bg, id, ""); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	waitFor(t, ctx, "the re-run finished, live", `body[data-status="idle"] #timeline tr.task.done:nth-child(3)`)
	live := evalString(t, ctx, timelineJS)
	liveChannels := evalString(t, ctx, channelsJS)

	check := func(what, rows string) {
		t.Helper()
		var steps, nodes []string
		for _, line := range strings.Split(rows, "\n") {
			cells := strings.Split(line, "|")
			if len(cells) > 3 && strings.HasPrefix(cells[0], "task-") {
				steps, nodes = append(steps, cells[2]), append(nodes, cells[3])
			}
		}
		// a (step 1) on the first run; b, c, d (steps 3, 4, 5) on the
		// re-run; nothing of the abandoned b, c, d at steps 2, 3, 4.
		if got := strings.Join(nodes, ","); got != "a,b,c,d" {
			t.Errorf("%s: timeline nodes %s, want a,b,c,d (each once)\n%s", what, got, rows)
		}
		if got := strings.Join(steps, ","); got != "1,3,4,5" {
			t.Errorf("%s: timeline steps %s, want 1,3,4,5 (in order)\n%s", what, got, rows)
		}
		titles := regexp.MustCompile(`(?m)^# (\S+(?: \S+)?) ·`).FindAllStringSubmatch(rows, -1)
		var ts []string
		for _, m := range titles {
			ts = append(ts, m[1])
		}
		if got := strings.Join(ts, ","); got != "Run,State edit,Re-run" {
			t.Errorf("%s: run groups %q, want Run, State edit, Re-run\n%s", what, got, rows)
		}
	}
	check("live", live)
	if n := evalString(t, ctx, `String(document.querySelectorAll("#earlier-runs details.run:not([open])").length)`); n != "2" {
		t.Errorf("%s earlier runs collapsed, want 2", n)
	}
	// The current run is the re-run, in the open table.
	if rows := evalString(t, ctx, `Array.from(document.querySelectorAll("#timeline tr.task")).map(r => r.cells[1].textContent).join(",")`); rows != "b,c,d" {
		t.Errorf("current run rows %q, want b,c,d", rows)
	}
	screenshot(t, ctx, "thread-fork.png")

	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page, live", `body[data-live="1"]`)
	reloaded := evalString(t, ctx, timelineJS)
	check("reloaded", reloaded)
	if reloaded != live {
		t.Errorf("the reload differs from the live tab:\nlive:\n%s\nreloaded:\n%s", live, reloaded)
	}
	if chans := evalString(t, ctx, channelsJS); chans != liveChannels {
		t.Errorf("the reload's channels differ from the live tab's:\nlive:\n%s\nreloaded:\n%s", liveChannels, chans)
	}
	// Graph colours: every node of the lineage done, a's from the first run.
	for _, n := range []string{"a", "b", "c", "d"} {
		if cls, err := e2e.Class(ctx, "n-"+n); err != nil || !strings.Contains(cls, "done") {
			t.Errorf("node %s has class %q (%v), want done", n, cls, err)
		}
	}
	// The channel table is the head's versions.
	tup, err := f.runs.Checkpoint(bg, id, "")
	if err != nil {
		t.Fatal(err)
	}
	for ch, v := range tup.Checkpoint.ChannelVersions {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(r => r ? r.cells[1].textContent : "missing")(document.getElementById("ch-`+ch+`"))`))
		if err != nil || got != fmt.Sprint(v) {
			t.Errorf("channel %s shows version %q (%v), the head has %d", ch, got, err, v)
		}
	}
}

// Items 3 and 4: a tab watching a resume live and a reloaded page show
// the same rows with the same classes: the cache hit reads "cached", the
// task a sibling's failure cancelled "cancelled", the interrupted task
// "answered" in its run and done in the resume, whose first row is the
// answer: the question, the answer, when, and through which page. The
// graph's colours agree too.
func TestE2ELiveTabAndReloadShowTheSameRuns(t *testing.T) {
	t.Parallel()
	f := serve(t, map[string]engine.Compiled{"truth": truthGraph(t)})
	bg := context.Background()
	// A first thread fills the cache for lookup's input.
	if _, err := f.runs.Start(bg, "truth", "warm", map[string]any{"n": 3}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "warm")
	if _, err := f.runs.Resume(bg, "warm", true); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "warm")

	const id = "truth"
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(bg, "truth", id, map[string]any{"n": 3}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the approval panel", `body[data-live="1"] #approve-0`)
	// Another tab approves (the form's post); this one watches the resume.
	if r := f.post(t, "/threads/"+id+"/resume", url.Values{"action": {"approve"}}); r.code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", r.code, r.body)
	}
	waitFor(t, ctx, "the resume failed, live", `body[data-live="1"][data-status="error"]`)
	waitFor(t, ctx, "wait cancelled, live", `#timeline tr.task.cancelled`)
	live := evalString(t, ctx, timelineJS)
	liveNodes := evalString(t, ctx, nodesJS)

	check := func(what, rows string) {
		t.Helper()
		for _, want := range []string{
			`|task answered|1|ask|`,   // interrupted, then answered
			`|task done|1|ask|`,       // ran again by the resume
			`|task cached|2|lookup|`,  // the cache hit
			`|task failed|3|boom|`,    // the failure
			`|task cancelled|3|wait|`, // cut short by it
			`Asked {"question":"Pay €2,500 to ACME?"} answered true via Studio thread page at `,
		} {
			if !strings.Contains(rows, want) {
				t.Errorf("%s: timeline lacks %q:\n%s", what, want, rows)
			}
		}
		if strings.Contains(rows, "|task running|") || strings.Contains(rows, "|task planned|") || strings.Contains(rows, "|task interrupted|") {
			t.Errorf("%s: a task still reads running, planned or interrupted:\n%s", what, rows)
		}
		if !regexp.MustCompile(`(?m)^# Resume · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · via Studio thread page$`).MatchString(rows) {
			t.Errorf("%s: no resume group titled with its time and origin:\n%s", what, rows)
		}
	}
	check("live", live)
	for node, want := range map[string]string{"lookup": "cached", "ask": "done", "boom": "failed", "wait": "cancelled"} {
		if cls, err := e2e.Class(ctx, "n-"+node); err != nil || !strings.Contains(cls, want) {
			t.Errorf("live: node %s has class %q (%v), want %s", node, cls, err, want)
		}
	}

	// A fresh tab (a reload) on the same thread.
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, tab, "the reloaded page, live", `body[data-live="1"]`)
	reloaded := evalString(t, tab, timelineJS)
	check("reloaded", reloaded)
	evalString(t, tab, `document.querySelectorAll("#earlier-runs details").forEach(d => d.open = true); "opened"`)
	screenshot(t, tab, "thread-runs.png")
	if reloaded != live {
		t.Errorf("the reload differs from the live tab:\nlive:\n%s\nreloaded:\n%s", live, reloaded)
	}
	if nodes := evalString(t, tab, nodesJS); nodes != liveNodes {
		t.Errorf("the reload's graph differs from the live tab's:\nlive:\n%s\nreloaded:\n%s", liveNodes, nodes)
	}
}

// Item 4: an answer given through the API is in the timeline too, marked
// so, and its question is escaped text.
func TestE2EAnswersThroughTheAPIAreInTheTimeline(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bg := context.Background()
	const id = "api-answer"
	if _, err := f.runs.Start(bg, "approval", id, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	if _, err := f.runs.Resume(bg, id, "ship it"); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the answer row", `#timeline tr.answer`)
	text := evalString(t, ctx, `document.querySelector("#timeline tr.answer").textContent.replace(/\s+/g, " ")`)
	for _, want := range []string{`Asked {"html":"<script>alert(1)</script>","question":"Ship it?"}`, `answered "ship it"`, "via API", " UTC"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer row %q lacks %q", text, want)
		}
	}
	if n := evalString(t, ctx, `String(document.querySelectorAll("#timeline tr.answer script").length)`); n != "0" {
		t.Fatalf("the question's markup became elements: %s", n)
	}
	// Item 3: draft ran before the resume and keeps its colour; the
	// answered review reads done, not interrupted.
	for node, want := range map[string]string{"draft": "done", "review": "done"} {
		if cls, err := e2e.Class(ctx, "n-"+node); err != nil || !strings.Contains(cls, want) || strings.Contains(cls, "interrupted") {
			t.Errorf("node %s has class %q (%v), want %s", node, cls, err, want)
		}
	}
}

// Item 7: two tabs wait on the same interrupt; one answers; the other's
// panel is retired at once, says who answered and when, and can no
// longer send an answer.
func TestE2EAnAnswerRetiresTheOtherTabsPanel(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const id = "two-tabs"
	if _, err := f.runs.Start(context.Background(), "approval", id, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	a := e2e.Browser(t)
	b, cancel := chromedp.NewContext(a)
	defer cancel()
	for _, tab := range []context.Context{a, b} {
		if err := chromedp.Do(tab, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, tab, "the approval panel, live", `body[data-live="1"] #approval #approve-0`)
	}
	// A click picks Reject; a second, deliberate one sends it (item 8).
	if err := chromedp.Do(a, chromedp.Click(chromedp.ID("reject-0"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "the confirmation", `#reject-0.confirming`)
	if err := chromedp.Do(a, chromedp.Click(chromedp.ID("reject-0"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b, "the other tab's panel retired", `#approval.retired #approval-retired`)
	note := evalString(t, b, `document.getElementById("approval-retired").textContent`)
	if !regexp.MustCompile(`^Answered via Studio thread page at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.`).MatchString(note) {
		t.Errorf("the retired panel says %q; want who answered and when", note)
	}
	if n := evalString(t, b, `String(Array.from(document.querySelectorAll("#approval button, #approval textarea, #approval input:not([type=hidden])")).filter(el => !el.disabled).length)`); n != "0" {
		t.Errorf("%s controls of the retired panel still work", n)
	}
	// The shortcut and a click do nothing: the thread has one resume.
	evalString(t, b, `document.getElementById("approve-0").click(); document.body.dispatchEvent(new KeyboardEvent("keydown", {key: "a", bubbles: true})); "sent"`)
	th := f.wait(t, id)
	if th.Status != runs.StatusIdle {
		t.Fatalf("thread is %s, want idle after one answer", th.Status)
	}
	if v := f.values(t, "approval", id); v["answer"] != "false" {
		t.Fatalf("answer = %v; the stale panel changed it", v["answer"])
	}
	if path := evalString(t, b, `location.pathname`); path != "/threads/"+id {
		t.Fatalf("the stale tab went to %s", path)
	}
	// Live, too, draft keeps its colour from the first run.
	waitFor(t, b, "the stale tab sees the run end", `body[data-status="idle"]`)
	if cls, err := e2e.Class(b, "n-draft"); err != nil || !strings.Contains(cls, "done") {
		t.Errorf("live, node draft has class %q (%v) after the resume, want done", cls, err)
	}
}

// Item 3, the other way a tab gets the thread's history: a socket the
// server cannot resume (a cursor of another process) gets the full
// catch-up, and the page rebuilt from it reads as the rendered page.
func TestE2EAFullCatchupRebuildsTheSamePage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	bg := context.Background()
	const id = "full-catchup"
	if _, err := f.runs.Start(bg, "approval", id, nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	if _, err := f.runs.ResumeWith(bg, id, true, &runs.ResumeOptions{Origin: runs.OriginThreadPage}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, id)
	// This server drops the page's cursor from the socket's URL.
	page := chi.NewRouter()
	handlers.Routes{Runs: f.runs}.Mount(page)
	mux := http.NewServeMux()
	mux.HandleFunc("/threads/"+id+"/ws", func(w http.ResponseWriter, r *http.Request) {
		r.URL.RawQuery = ""
		page.ServeHTTP(w, r)
	})
	mux.Handle("/", page)
	srv := httptest.NewServer(handlers.Secure(mux))
	t.Cleanup(srv.Close)

	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	rendered := evalString(t, ctx, timelineJS)
	if !strings.Contains(rendered, "|task answered|") || !strings.Contains(rendered, "|task done|") || !strings.Contains(rendered, "answer||review|Asked ") {
		t.Fatalf("the rendered page lacks the runs:\n%s", rendered)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads/"+id)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live after a full catch-up", `body[data-live="1"]`)
	if rebuilt := evalString(t, ctx, timelineJS); rebuilt != rendered {
		t.Errorf("the full catch-up rebuilt another page:\nrendered:\n%s\nrebuilt:\n%s", rendered, rebuilt)
	}
}

package handlers_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
	"github.com/superstep-dev/superstep/internal/e2e"
	"github.com/superstep-dev/superstep/runs"
)

// Issue 14, items 10–12: the graph is inspectable. A node opens its
// details (what it reads, writes, how it retries and caches, and on a
// thread page what it read and wrote at each step); Send fan-out is drawn
// as labelled edges; large drawings pan and zoom; a legend explains the
// styles; breakpoints reach nodes inside an open subgraph.

type inspectState struct {
	Items []string `json:"items"`
	Done  []string `json:"done" reduce:"append"`
	Note  string   `json:"note"`
}

// inspectNote is sum's input: it reads one state key.
type inspectNote struct {
	Note string `json:"note"`
}

// inspectGraph is START → plan ⇒(Send per item) work → sum → END: plan
// retries, work is cached and only Sends reach it, sum reads one key.
func inspectGraph(t testing.TB) engine.Compiled {
	t.Helper()
	sg := engine.NewStateGraph[inspectState]()
	sg.AddNode("plan", func(context.Context, inspectState) (engine.Output, error) {
		return engine.Update{"items": []string{"alpha", "beta"}, "note": "planned"}, nil
	}, engine.SendTargets("work"), engine.WithRetry(engine.RetryPolicy{MaxAttempts: 4, InitialInterval: 10 * time.Millisecond}))
	engine.AddNodeFunc(sg, "work", func(_ context.Context, item string) (engine.Output, error) {
		return engine.Update{"done": []string{"did " + item}}, nil
	}, engine.WithCache(engine.CachePolicy{TTL: time.Hour}))
	engine.AddNodeFunc(sg, "sum", func(_ context.Context, in inspectNote) (engine.Output, error) {
		return engine.Update{"note": in.Note + " and summed"}, nil
	})
	sg.AddEdge(engine.Start, "plan")
	sg.AddConditionalEdges("plan", func(_ context.Context, s inspectState) (engine.Route, error) {
		sends := make([]engine.Send, len(s.Items))
		for i, it := range s.Items {
			sends[i] = engine.Send{Node: "work", Arg: it}
		}
		return engine.SendTo(sends...), nil
	}, nil)
	sg.AddEdge("work", "sum").AddEdge("sum", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory(), Cache: cache.NewMemory(nil)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func setupInspect(t testing.TB) *fixture {
	t.Helper()
	research, err := researchsubgraph.New(researchsubgraph.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, map[string]engine.Compiled{"inspect": inspectGraph(t), "research": research})
}

// text is the text of the element sel matches ("" when none does).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).textContent || ""`))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(s), " ")
}

func evalBool(t *testing.T, ctx context.Context, js string) bool {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return b
}

// Item 10, on the graph page: clicking a node opens its details; the
// keyboard reaches every node, Enter opens the details and Escape closes
// them, handing the focus back to the node.
func TestE2ENodeDetailsOnTheGraphPage(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/inspect"),
		chromedp.WaitReady(chromedp.CSS(`g#n-plan[data-node]`)),
	); err != nil {
		t.Fatal(err)
	}
	if !evalBool(t, ctx, `["n-plan", "n-work", "n-sum"].every(id => { const g = document.getElementById(id); return g.tabIndex === 0 && g.getAttribute("role") === "button" && g.getAttribute("aria-label").includes(id.slice(2)) })`) {
		t.Fatal("the nodes are not focusable buttons with a name")
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g#n-plan text`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "plan's details", `#node-details:not([hidden]) .node-details-body[data-node="plan"]`)
	for sel, want := range map[string]string{
		"#nd-triggers": "branch:to:plan",
		"#nd-reads":    "items, done, note",
		"#nd-writes":   "items, done, note",
		"#nd-retry":    "up to 4 attempts; first wait 10ms",
		"#nd-cache":    "not cached",
	} {
		if got := text(t, ctx, "#node-details "+sel); !strings.Contains(got, want) {
			t.Errorf("plan's %s reads %q, want it to say %q", sel, got, want)
		}
	}

	// The keyboard: focus work, Enter opens its details. Enter is sent
	// again (opening is idempotent) when the first was dispatched before
	// the focus had landed: on a loaded CI machine it was lost that way.
	opened := false
	for try := 0; try < 3 && !opened; try++ {
		if err := chromedp.Do(ctx, chromedp.Focus(chromedp.ID("n-work")), chromedp.KeyEvent("\r")); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		opened = chromedp.Do(wctx, chromedp.WaitReady(chromedp.CSS(`#node-details:not([hidden]) .node-details-body[data-node="work"]`))) == nil
		cancel()
	}
	waitFor(t, ctx, "work's details, opened with Enter", `#node-details:not([hidden]) .node-details-body[data-node="work"]`)
	if got := text(t, ctx, "#nd-reads"); !strings.Contains(got, "argument of each Send") {
		t.Errorf("work's reads %q; only Sends deliver its input", got)
	}
	if got := text(t, ctx, "#nd-triggers"); !strings.Contains(got, "each Send from plan") {
		t.Errorf("work's triggers %q do not name the Sends that plan it", got)
	}
	if got := text(t, ctx, "#nd-cache"); !strings.Contains(got, "cached for 1h0m0s") {
		t.Errorf("work's cache policy %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\x1b")); err != nil { // Escape
		t.Fatal(err)
	}
	waitFor(t, ctx, "the panel closed by Escape", `#node-details[hidden]`)
	if !evalBool(t, ctx, `document.activeElement && document.activeElement.id === "n-work"`) {
		t.Error("after Escape the focus is not back on the node that opened the panel")
	}
	// Space opens it too.
	if err := chromedp.Do(ctx, chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "work's details, opened with Space", `#node-details:not([hidden]) .node-details-body[data-node="work"]`)

	// An unknown node is a 404 that says which.
	if r := f.get(t, "/graphs/inspect/nodes/nope?fragment=1"); r.code != 404 || !strings.Contains(r.body, `nope`) {
		t.Errorf("unknown node: %d %.200s", r.code, r.body)
	}
}

// Item 10, on a thread page: a node's details list each step it ran on
// the thread's current branch, with what it read (the state keys it
// reads, or its Send's argument) and what it wrote.
func TestE2ENodeDetailsOnAThreadPage(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(context.Background(), "inspect", "e2e-inspect", map[string]any{"note": "start"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := f.wait(t, "e2e-inspect"); th.Status != runs.StatusIdle {
		t.Fatalf("thread %+v, want it finished", th)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-inspect")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page, live", `body[data-live="1"]`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g#n-work text`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "work's details with its runs", `#node-details:not([hidden]) .node-run`)
	runsText, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#node-details .node-run")).map(s => s.textContent.replace(/\s+/g, " ").trim())`))
	if err != nil {
		t.Fatal(err)
	}
	if len(runsText) != 2 {
		t.Fatalf("work's runs %q, want its two Send tasks", runsText)
	}
	var inputs []string
	for _, r := range runsText {
		if !strings.Contains(r, "Step 2") || !strings.Contains(r, "done") || !strings.Contains(r, "Input (Send argument)") {
			t.Errorf("work's run %q: want step 2, done, its Send argument", r)
		}
		for _, item := range []string{"alpha", "beta"} {
			if strings.Contains(r, `"`+item+`"`) && strings.Contains(r, `did `+item) {
				inputs = append(inputs, item)
			}
		}
	}
	if strings.Join(inputs, ",") != "alpha,beta" && strings.Join(inputs, ",") != "beta,alpha" {
		t.Errorf("work's runs %q do not show each Send's argument with its own write", runsText)
	}
	screenshot(t, ctx, "node-details.png")

	// sum reads one key: its input is that key as it stood before its step.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g#n-sum text`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "sum's details", `#node-details .node-details-body[data-node="sum"] .node-run`)
	in, out := text(t, ctx, "#node-details .nd-input"), text(t, ctx, "#node-details .nd-output")
	if in != `{ "note": "planned" }` || !strings.Contains(out, `"note": "planned and summed"`) {
		t.Errorf("sum's input %q output %q", in, out)
	}
	if strings.Contains(in, "items") {
		t.Errorf("sum's input %q shows keys it does not read", in)
	}
}

// Item 10, inside an open subgraph: the details of an inner node list its
// runs in the subgraph's runs on the thread's branch.
func TestE2ENodeDetailsInsideAnOpenSubgraph(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if _, err := f.runs.Start(context.Background(), "research", "e2e-inner", map[string]any{"question": "Compare Postgres and SQLite for a multi-user web app"}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if th := f.wait(t, "e2e-inner"); th.Status != runs.StatusInterrupted {
		t.Fatalf("thread %+v, want it waiting at review", th)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-inner?expand=research")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the inner plan node", `g[id="n-research:plan"][data-node="research:plan"]`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g[id="n-research:plan"] text`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "plan's runs", `#node-details .node-details-body[data-node="research:plan"] .node-run.done`)
	in, out := text(t, ctx, "#node-details .nd-input"), text(t, ctx, "#node-details .nd-output")
	if !strings.Contains(in, "Compare Postgres and SQLite") || !strings.Contains(out, `"queries"`) {
		t.Errorf("research:plan's input %q output %q: want the question it read and the queries it wrote", in, out)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`g[id="n-research:review"] text`))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "review waiting", `#node-details .node-details-body[data-node="research:review"] .node-run.interrupted`)
}

// Item 11: the Send fan-out is an edge from the sender to the target,
// labelled "Send" and dashed, with no "*" pseudo-node; it lights when the
// Sends fire.
func TestE2ESendFanOutIsARealEdge(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/inspect"),
		chromedp.WaitReady(chromedp.CSS(`g#e-plan-work`)),
	); err != nil {
		t.Fatal(err)
	}
	cls, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("e-plan-work"), "class"))
	if err != nil || !strings.Contains(" "+cls.Value+" ", " send ") {
		t.Fatalf("the plan → work edge has class %q (%v), want send", cls.Value, err)
	}
	if got := text(t, ctx, "g#e-plan-work text"); got != "Send" {
		t.Errorf("the Send edge's label is %q", got)
	}
	if got := text(t, ctx, "g#e-plan-work title"); got != "plan->work" {
		t.Errorf("the Send edge connects %q, want plan->work", got)
	}
	if dash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("g#e-plan-work path").getAttribute("stroke-dasharray") || getComputedStyle(document.querySelector("g#e-plan-work path")).strokeDasharray`)); err != nil || dash == "" || dash == "none" {
		t.Errorf("the Send edge is drawn with dash %q (%v), want dashed", dash, err)
	}
	if dash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("g#e-work-sum path").getAttribute("stroke-dasharray") || "none"`)); err != nil || dash != "none" {
		t.Errorf("a plain edge is drawn with dash %q (%v)", dash, err)
	}
	// The edge touches both nodes: it starts at plan's lower side and ends
	// at work's upper side.
	if !evalBool(t, ctx, `(() => {
		const b = (id) => document.getElementById(id).getBBox();
		const e = b("e-plan-work"), p = b("n-plan"), w = b("n-work");
		return Math.abs(e.y - (p.y + p.height)) < 4 && Math.abs((e.y + e.height) - w.y) < 4;
	})()`) {
		t.Error("the Send edge does not run from plan to work")
	}
	if evalBool(t, ctx, `Array.from(document.querySelectorAll("#graph svg title")).some(t => t.textContent.trim() === "*") || !!document.getElementById("n-*")`) {
		t.Error("the drawing still has a * pseudo-node")
	}

	// A run: the Send edge is lit with the others that fired, on the live
	// page and after a reload.
	if _, err := f.runs.Start(context.Background(), "inspect", "e2e-send", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "e2e-send")
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-send")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the Send edge lit", `g#e-plan-work.send.fired`)
}

// Item 12: zoom and pan change the drawing's viewBox (buttons, wheel,
// drag, keys), and reset brings it back; the legend explains the edge and
// node styles.
func TestE2EPanZoomAndLegend(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(f.srv.URL+"/graphs/research?expand=research"),
		chromedp.WaitReady(chromedp.CSS(`#graph svg[tabindex]`)),
	); err != nil {
		t.Fatal(err)
	}
	viewBox := func() [4]float64 {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#graph svg").getAttribute("viewBox")`))
		if err != nil {
			t.Fatal(err)
		}
		var b [4]float64
		for i, x := range strings.Fields(s) {
			if i < 4 {
				b[i], _ = strconv.ParseFloat(x, 64)
			}
		}
		return b
	}
	home := viewBox()
	if home[2] <= 0 {
		t.Fatalf("viewBox %v", home)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("zoom-in"))); err != nil {
		t.Fatal(err)
	}
	in := viewBox()
	if !(in[2] < home[2]*0.9 && in[3] < home[3]*0.9) {
		t.Fatalf("after + the viewBox is %v (was %v), want a smaller window: zoomed in", in, home)
	}
	// Drag to pan: the window moves against the drag.
	rect, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector("#graph svg").getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2] })()`))
	if err != nil {
		t.Fatal(err)
	}
	x, y := rect[0], rect[1]
	if err := chromedp.Do(ctx,
		chromedp.MouseEvent(chromedp.MouseMoved, x, y),
		chromedp.MouseEvent(chromedp.MousePressed, x, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, x-30, y-20, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, x-60, y-40, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x-60, y-40, chromedp.ButtonLeft, chromedp.ClickCount(1)),
	); err != nil {
		t.Fatal(err)
	}
	panned := viewBox()
	if !(panned[0] > in[0]+1 && panned[1] > in[1]+1) || panned[2] != in[2] {
		t.Errorf("after dragging up-left the viewBox is %v (was %v), want it moved right and down, same size", panned, in)
	}
	// The wheel zooms around the pointer.
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("#graph svg").dispatchEvent(new WheelEvent("wheel", {deltaY: 300, clientX: `+strconv.FormatFloat(x, 'f', 0, 64)+`, clientY: `+strconv.FormatFloat(y, 'f', 0, 64)+`, bubbles: true, cancelable: true}))`)); err != nil {
		t.Fatal(err)
	}
	if out := viewBox(); !(out[2] > panned[2]) {
		t.Errorf("after wheeling down the viewBox is %v (was %v), want zoomed out", out, panned)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("zoom-reset"))); err != nil {
		t.Fatal(err)
	}
	if got := viewBox(); got != home {
		t.Errorf("after reset the viewBox is %v, want %v", got, home)
	}
	// The keyboard: the drawing is focusable; + zooms in, 0 resets.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#graph svg`)), chromedp.KeyEvent("+")); err != nil {
		t.Fatal(err)
	}
	if got := viewBox(); !(got[2] < home[2]) {
		t.Errorf("after + on the focused drawing the viewBox is %v", got)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("0")); err != nil {
		t.Fatal(err)
	}
	if got := viewBox(); got != home {
		t.Errorf("after 0 the viewBox is %v, want %v", got, home)
	}
	if !evalBool(t, ctx, `["zoom-in", "zoom-out", "zoom-reset"].every(id => document.getElementById(id).getAttribute("aria-label"))`) {
		t.Error("the zoom buttons have no accessible names")
	}

	for id, want := range map[string]string{
		"legend-edge-plain":       "plain edge",
		"legend-edge-conditional": "conditional",
		"legend-edge-join":        "join",
		"legend-edge-send":        "Send",
		"legend-node-subgraph":    "subgraph",
		"legend-node-breakpoint":  "breakpoint",
	} {
		if got := text(t, ctx, "#"+id); !strings.Contains(got, want) {
			t.Errorf("legend entry %s reads %q, want %q", id, got, want)
		}
	}
	// The Send sample is drawn dashed, in the Send edges' colour.
	if !evalBool(t, ctx, `(() => { const l = document.querySelector("#legend-edge-send line"); return l.getAttribute("stroke-dasharray") && getComputedStyle(l).stroke === "rgb(128, 90, 213)" })()`) {
		t.Error("the legend's Send sample is not drawn like a Send edge")
	}
}

// Item 12: with the research subgraph open, the start form offers
// breakpoints on its inner nodes; ticking "before research:search" makes
// the run stop there.
func TestE2EBreakpointInsideAnOpenSubgraph(t *testing.T) {
	t.Parallel()
	f := setupInspect(t)
	ctx := e2e.Browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/graphs/research")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the graph page", `#start-form`)
	if evalBool(t, ctx, `!!document.querySelector('[id="bp-before-research:search"]')`) {
		t.Fatal("inner nodes are offered while the subgraph is closed")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/graphs/research?expand=research")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the inner node's breakpoint box", `input[id="bp-before-research:search"][name="interrupt_before"]`)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`input[id="bp-before-research:search"]`)),
		chromedp.SetValue(chromedp.CSS(`input[name="thread"]`), "e2e-inner-bp"),
		chromedp.SetValue(chromedp.CSS(`textarea[name="input"]`), `{"question": "Compare Postgres and SQLite for a multi-user web app"}`),
		chromedp.Click(chromedp.ID("start")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the thread paused", `body[data-status="interrupted"] #approval`)
	if got := text(t, ctx, "#approval"); !strings.Contains(got, "stopped before research:search") {
		t.Errorf("the pause says %q, want it before research:search", got)
	}
	th, err := f.runs.Thread(context.Background(), "e2e-inner-bp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(th.Before, ",") != "research:search" {
		t.Errorf("the thread stopped before %v", th.Before)
	}
	// A breakpoint on a name the graph does not have is refused, saying which.
	if r := f.post(t, "/graphs/research/runs", url.Values{"interrupt_before": {"research:nope"}, "input": {"{}"}}); r.code != 400 || !strings.Contains(r.body, "research:nope") {
		t.Errorf("breakpoint on research:nope: %d %.300s", r.code, r.body)
	}
	// plan ran inside the subgraph; search has not.
	if err := chromedp.Do(ctx, chromedp.Navigate(f.srv.URL+"/threads/e2e-inner-bp?expand=research")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "plan done in the open subgraph", `g[id="n-research:plan"].done`)
	if evalBool(t, ctx, `document.querySelector('g[id="n-research:search"]').classList.contains("done")`) {
		t.Error("search ran although the run was to stop before it")
	}
}

// After a fork, a node's details list its runs on the head's lineage
// only, as the timeline does: the run it made on the abandoned branch is
// not shown as done.
func TestNodeDetailsFollowTheHeadsLineage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	close(f.gate.release)
	ctx := context.Background()
	if _, err := f.runs.Start(ctx, "flow", "forked", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "forked")
	if r := f.get(t, "/threads/forked/nodes/slow?fragment=1"); r.code != 200 || strings.Count(r.body, `class="node-run`) != 1 {
		t.Fatalf("before the fork: %d, %d runs of slow: %.600s", r.code, strings.Count(r.body, `class="node-run`), r.body)
	}
	// Fork from the checkpoint where slow was next: slow has not run on
	// the new branch.
	g, err := f.runs.Graph("flow")
	if err != nil {
		t.Fatal(err)
	}
	hist, err := g.Pregel().GetStateHistory(ctx, checkpoints.Config{ThreadID: "forked"}, engine.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var at string
	for _, s := range hist {
		if len(s.Next) == 1 && s.Next[0] == "slow" {
			at = s.Config.CheckpointID
		}
	}
	if _, err := f.runs.UpdateState(ctx, "forked", at, map[string]any{"n": 5}, "fetch"); err != nil {
		t.Fatal(err)
	}
	r := f.get(t, "/threads/forked/nodes/slow?fragment=1")
	if r.code != 200 || strings.Contains(r.body, "node-run done") || strings.Count(r.body, `class="node-run`) != 1 || !strings.Contains(r.body, "pending") {
		t.Fatalf("after the fork, slow's runs: %.1500s; want only its pending task on the new branch", r.body)
	}
}

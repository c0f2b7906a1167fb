package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

func TestGraphListShowsNodeCountsAndWarnings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res := f.get(t, "/graphs")
	if res.code != http.StatusOK {
		t.Fatalf("GET /graphs = %d", res.code)
	}
	for _, want := range []string{`id="graph-flow"`, `href="/graphs/approval"`, `<td class="num">4</td>`, "<strong>merge</strong>"} {
		if !strings.Contains(res.body, want) {
			t.Errorf("graphs page lacks %q", want)
		}
	}
}

func TestGraphPageDrawsTheGraphAndPrefillsTheForm(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res := f.get(t, "/graphs/approval")
	if res.code != http.StatusOK {
		t.Fatalf("GET = %d", res.code)
	}
	for _, want := range []string{
		`<svg`, `id="n-review"`, `id="e-draft-review"`, `class="edge gedge conditional"`, // the drawing
		`&#34;log&#34;: []`, `&#34;n&#34;: 0`, // the input prefilled from the zero state
		`name="interrupt_before" value="review"`, `name="recursion_limit"`, `value="` + strconv.Itoa(handlers.DefaultRecursionLimit) + `"`,
		`action="/graphs/approval/runs"`,
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("graph page lacks %q", want)
		}
	}
	if res := f.get(t, "/graphs/fanin"); !strings.Contains(res.body, `id="warnings"`) || !strings.Contains(res.body, "warn") {
		t.Error("the fan-in graph's page shows no lint warning")
	}
	if res := f.get(t, "/graphs/nope"); res.code != http.StatusNotFound || !strings.Contains(res.body, `unknown graph &#34;nope&#34;`) {
		t.Errorf("unknown graph = %d %q", res.code, res.body)
	}
}

func TestStartRunRedirectsToTheThread(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res := f.post(t, "/graphs/approval/runs", url.Values{"thread": {"th-1"}, "input": {`{"log": ["hello"], "n": 3}`}, "recursion_limit": {"10"}})
	if res.code != http.StatusSeeOther || res.location != "/threads/th-1" {
		t.Fatalf("start = %d to %q: %s", res.code, res.location, res.body)
	}
	if th := f.wait(t, "th-1"); th.Status != runs.StatusInterrupted || th.Options.RecursionLimit != 10 {
		t.Fatalf("thread = %+v", th)
	}
	if v := f.values(t, "approval", "th-1"); fmt.Sprint(v["log"]) != "[hello draft]" || v["n"] != 3 {
		t.Fatalf("values = %v", v)
	}
	// An empty thread id makes a new thread.
	res = f.post(t, "/graphs/approval/runs", url.Values{"input": {""}})
	if res.code != http.StatusSeeOther || !strings.HasPrefix(res.location, "/threads/") || len(res.location) < len("/threads/")+30 {
		t.Fatalf("start without a thread = %d to %q", res.code, res.location)
	}
}

func TestStartRunRefusesBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	deep := strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65)
	for _, tc := range []struct {
		name string
		path string
		form url.Values
		code int
		want string
	}{
		{"bad JSON", "/graphs/flow/runs", url.Values{"input": {`{"log": [}`}}, 400, "invalid character"},
		{"too deep", "/graphs/flow/runs", url.Values{"input": {deep}}, 400, "nested deeper than 64 levels"},
		{"duplicate key", "/graphs/flow/runs", url.Values{"input": {`{"n": 1, "n": 2}`}}, 400, "appears twice"},
		{"not an object", "/graphs/flow/runs", url.Values{"input": {`[1, 2]`}}, 400, "want a JSON object"},
		{"unknown key", "/graphs/flow/runs", url.Values{"input": {`{"nope": 1}`}}, 400, "nope"},
		{"wrong type", "/graphs/flow/runs", url.Values{"input": {`{"n": "many"}`}}, 400, "key &#34;n&#34; wants int"},
		{"bad thread id", "/graphs/flow/runs", url.Values{"thread": {"../x"}}, 400, "thread id"},
		{"thread id .", "/graphs/flow/runs", url.Values{"thread": {"."}}, 400, "letters, digits"},
		{"thread id ..", "/graphs/flow/runs", url.Values{"thread": {".."}}, 400, "other than"},
		{"bad limit", "/graphs/flow/runs", url.Values{"recursion_limit": {"lots"}}, 400, "not a whole number"},
		{"limit too high", "/graphs/flow/runs", url.Values{"recursion_limit": {"10000000"}}, 400, "recursion limit 10000000"},
		{"unknown breakpoint", "/graphs/flow/runs", url.Values{"interrupt_before": {"ghost"}}, 400, "ghost"},
		{"unknown graph", "/graphs/ghost/runs", url.Values{}, 404, "unknown graph"},
	} {
		res := f.post(t, tc.path, tc.form)
		if res.code != tc.code || !strings.Contains(res.body, tc.want) {
			t.Errorf("%s: %d, want %d saying %q; body: %.300s", tc.name, res.code, tc.code, tc.want, res.body)
		}
	}
	if ts := f.list(t, runs.ThreadFilter{}); len(ts) != 0 {
		t.Fatalf("refused starts left threads behind: %+v", ts)
	}
	// The form comes back with what was typed.
	res := f.post(t, "/graphs/flow/runs", url.Values{"input": {`{"nope": 1}`}, "interrupt_after": {"slow"}})
	if !strings.Contains(res.body, `id="form-error"`) || !strings.Contains(res.body, `{&#34;nope&#34;: 1}`) || !strings.Contains(res.body, `value="slow" id="bp-after-slow" checked`) {
		t.Errorf("the refused form was not echoed back: %.2000s", res.body)
	}
}

func TestStartRunOnABusyThreadIs409(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if res := f.post(t, "/graphs/flow/runs", url.Values{"thread": {"busy"}}); res.code != http.StatusSeeOther {
		t.Fatalf("first start = %d %s", res.code, res.body)
	}
	<-f.gate.entered
	res := f.post(t, "/graphs/flow/runs", url.Values{"thread": {"busy"}})
	if res.code != http.StatusConflict || !strings.Contains(res.body, "already has an active run") {
		t.Fatalf("second start = %d: %.500s", res.code, res.body)
	}
	close(f.gate.release)
	f.wait(t, "busy")
}

func TestBodyLargerThanTheLimitIs413(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res := f.post(t, "/graphs/flow/runs", url.Values{"input": {`{"log": ["` + strings.Repeat("x", 2<<20) + `"]}`}})
	if res.code != http.StatusRequestEntityTooLarge || !strings.Contains(res.body, "larger than 1 MiB") {
		t.Fatalf("huge body = %d: %.300s", res.code, res.body)
	}
}

func TestCrossSitePostIsRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Origin": "https://evil.example"},
	} {
		h["Content-Type"] = "application/x-www-form-urlencoded"
		res := f.do(t, http.MethodPost, "/graphs/flow/runs", strings.NewReader("thread=evil"), h)
		if res.code != http.StatusForbidden || !strings.Contains(res.body, "another site") {
			t.Errorf("%v: %d %.200s", h, res.code, res.body)
		}
	}
	if _, err := f.runs.Thread(context.Background(), "evil"); err == nil {
		t.Fatal("a cross-site post started a run")
	}
}

func TestThreadListFilters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for _, s := range []struct{ graph, thread string }{{"approval", "a-1"}, {"fanin", "f-1"}} {
		if _, err := f.runs.Start(ctx, s.graph, s.thread, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		f.wait(t, s.thread)
	}
	for _, tc := range []struct {
		query    string
		code     int
		want     []string
		wantNone []string
	}{
		{"", 200, []string{`id="thread-a-1"`, `id="thread-f-1"`}, nil},
		{"?status=interrupted", 200, []string{`id="thread-a-1"`}, []string{`id="thread-f-1"`}},
		{"?graph=fanin", 200, []string{`id="thread-f-1"`}, []string{`id="thread-a-1"`}},
		{"?status=error", 200, []string{`id="no-threads"`}, []string{`id="thread-a-1"`}},
		{"?status=sleeping", 400, []string{"unknown status"}, nil},
		{"?graph=ghost", 400, []string{"unknown graph"}, nil},
	} {
		res := f.get(t, "/threads"+tc.query)
		if res.code != tc.code {
			t.Errorf("%s: %d", tc.query, res.code)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.body, w) {
				t.Errorf("%s: lacks %q", tc.query, w)
			}
		}
		for _, w := range tc.wantNone {
			if strings.Contains(res.body, w) {
				t.Errorf("%s: has %q", tc.query, w)
			}
		}
	}
}

func TestThreadPageShowsTimelineChannelsAndApproval(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.runs.Start(context.Background(), "approval", "ap", map[string]any{"n": 1}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	th := f.wait(t, "ap")
	res := f.get(t, "/threads/ap")
	if res.code != http.StatusOK {
		t.Fatalf("GET = %d", res.code)
	}
	for _, want := range []string{
		`data-thread="ap"`, `data-status="interrupted"`, `id="n-review"`, `src="/static/studio.js"`,
		`class="task done"`, `<td>draft</td>`, `class="task interrupted"`, // timeline
		`id="ch-n"`, `id="ch-log" class="bumped"`, // channels
		`id="approval"`, `id="interrupt-` + th.Pending[0].ID + `"`, `id="approve-0"`, `id="reject-0"`, `id="respond-0"`,
		`&#34;question&#34;: &#34;Ship it?&#34;`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`, // the interrupt value is escaped text
	} {
		if !strings.Contains(res.body, want) {
			t.Errorf("thread page lacks %q", want)
		}
	}
	if strings.Contains(res.body, "<script>alert(1)") {
		t.Fatal("state reached the page as HTML")
	}
	if res := f.get(t, "/threads/ghost"); res.code != http.StatusNotFound {
		t.Errorf("unknown thread = %d", res.code)
	}
}

func TestResumeRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	start := func(id string) runs.Thread {
		if _, err := f.runs.Start(ctx, "approval", id, nil, runs.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		return f.wait(t, id)
	}
	for _, tc := range []struct {
		name       string
		form       func(th runs.Thread) url.Values
		wantAnswer string
		wantLog    string
	}{
		{"approve", func(th runs.Thread) url.Values {
			return url.Values{"action": {"approve"}, "interrupt_id": {th.Pending[0].ID}}
		}, "true", "[draft published]"},
		{"reject", func(runs.Thread) url.Values { return url.Values{"action": {"reject"}} }, "false", "[draft]"},
		{"respond", func(th runs.Thread) url.Values {
			return url.Values{"action": {"respond"}, "value": {`"later, please"`}, "interrupt_id": {th.Pending[0].ID}}
		}, "later, please", "[draft]"},
	} {
		id := "resume-" + tc.name
		th := start(id)
		res := f.post(t, "/threads/"+id+"/resume", tc.form(th))
		if res.code != http.StatusSeeOther || res.location != "/threads/"+id {
			t.Fatalf("%s: %d %q %.300s", tc.name, res.code, res.location, res.body)
		}
		if th := f.wait(t, id); th.Status != runs.StatusIdle {
			t.Fatalf("%s: thread %+v", tc.name, th)
		}
		v := f.values(t, "approval", id)
		if v["answer"] != tc.wantAnswer || fmt.Sprint(v["log"]) != tc.wantLog {
			t.Errorf("%s: values %v, want answer %q and log %s", tc.name, v, tc.wantAnswer, tc.wantLog)
		}
	}

	th := start("bad")
	for _, tc := range []struct {
		name string
		path string
		form url.Values
		code int
		want string
	}{
		{"unknown action", "/threads/bad/resume", url.Values{"action": {"maybe"}}, 400, "use approve, reject, respond or continue"},
		{"bad JSON", "/threads/bad/resume", url.Values{"action": {"respond"}, "value": {"{"}}, 400, "response: bad JSON"},
		{"empty response", "/threads/bad/resume", url.Values{"action": {"respond"}}, 400, "type a JSON value"},
		{"unknown interrupt", "/threads/bad/resume", url.Values{"action": {"approve"}, "interrupt_id": {"feed"}}, 400, "no pending interrupt"},
		{"unknown thread", "/threads/ghost/resume", url.Values{"action": {"approve"}}, 404, "unknown thread"},
		{"idle thread", "/threads/resume-approve/resume", url.Values{"action": {"approve"}}, 409, "is not interrupted"},
	} {
		res := f.post(t, tc.path, tc.form)
		if res.code != tc.code || !strings.Contains(res.body, tc.want) {
			t.Errorf("%s: %d, want %d saying %q: %.300s", tc.name, res.code, tc.code, tc.want, res.body)
		}
	}
	if now, _ := f.runs.Thread(context.Background(), "bad"); now.Status != runs.StatusInterrupted || now.RunID != th.RunID {
		t.Fatalf("refused resumes changed the thread: %+v", now)
	}
}

func TestCancelRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if res := f.post(t, "/threads/ghost/cancel", nil); res.code != http.StatusNotFound {
		t.Errorf("cancel unknown = %d", res.code)
	}
	if res := f.post(t, "/graphs/flow/runs", url.Values{"thread": {"c"}}); res.code != http.StatusSeeOther {
		t.Fatal(res.body)
	}
	<-f.gate.entered
	if res := f.post(t, "/threads/c/cancel", nil); res.code != http.StatusSeeOther {
		t.Fatalf("cancel = %d %s", res.code, res.body)
	}
	if th := f.wait(t, "c"); th.Status != runs.StatusIdle || th.Error != "cancelled" {
		t.Fatalf("after cancel: %+v", th)
	}
	if res := f.post(t, "/threads/c/cancel", nil); res.code != http.StatusConflict || !strings.Contains(res.body, "no active run") {
		t.Fatalf("cancel idle = %d %.200s", res.code, res.body)
	}
}

func TestThreadWebsocketSendsCatchupThenLive(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(f.srv.URL, "http")
	if _, resp, err := websocket.Dial(ctx, wsURL+"/threads/ghost/ws", nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown thread: %v", err)
	}
	if _, err := f.runs.Start(ctx, "flow", "ws", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	<-f.gate.entered
	_, resp, err := websocket.Dial(ctx, wsURL+"/threads/ws/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign origin: %v", err)
	}
	c, _, err := websocket.Dial(ctx, wsURL+"/threads/ws/ws", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {f.srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	stream := newEventStream(c)
	read := func() runs.Event {
		ev, err := stream.next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	sawFetch := false
	for {
		ev := read()
		if !ev.Catchup {
			t.Fatalf("live event %+v before the catch-up ended", ev)
		}
		sawFetch = sawFetch || ev.Kind == runs.KindTaskFinished && ev.Node == "fetch"
		if ev.Kind == runs.KindCaughtUp {
			if ev.Status != runs.StatusRunning {
				t.Fatalf("caught_up status %q", ev.Status)
			}
			break
		}
	}
	if !sawFetch {
		t.Fatal("the catch-up does not say fetch finished")
	}
	close(f.gate.release)
	for {
		ev := read()
		if ev.Kind == runs.KindRunFinished {
			if ev.Status != runs.StatusIdle || ev.Catchup {
				t.Fatalf("run_finished %+v", ev)
			}
			break
		}
	}
}

func TestStaticAssetsAreServed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, p := range []string{"/static/studio.js", "/static/studio.css"} {
		if res := f.get(t, p); res.code != http.StatusOK || len(res.body) < 100 {
			t.Errorf("%s = %d", p, res.code)
		}
	}
	if res := f.get(t, "/static/../go.mod"); res.code == http.StatusOK {
		t.Error("a path outside the assets was served")
	}
}

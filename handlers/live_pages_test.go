package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/superstep-dev/superstep/runs"
)

// The thread page carries what the socket would otherwise resend: the
// fired edges, durations, the values panel and a cursor; the socket
// opened at that cursor sends no second catch-up, only what is new.
func TestThreadPageRendersOnceAndSocketResumesAtItsCursor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	close(f.gate.release)
	if _, err := f.runs.Start(ctx, "flow", "once", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "once")
	page := f.get(t, "/threads/once")
	if page.code != http.StatusOK {
		t.Fatalf("thread page = %d", page.code)
	}
	for _, want := range []string{`id="graph-state"`, `["fetch","slow"]`, `id="v-log"`, `class="num ms">`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("thread page lacks %s", want)
		}
	}
	if regexp.MustCompile(`class="num ms"></td>`).MatchString(page.body) {
		t.Error("a finished task shows no duration on the page")
	}
	m := regexp.MustCompile(`data-cursor="([^"]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		t.Fatal("the page has no cursor")
	}
	wsURL := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/threads/once/ws"
	hdr := &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {f.srv.URL}}}
	// A malformed cursor is refused before the upgrade, whatever part of
	// it is wrong (a seq past uint64 once passed a digit-count check and
	// failed only after the socket was open).
	for _, bad := range []struct{ cursor, says string }{
		{"bad cursor", "no &#39;:&#39;"},
		{"ab:99999999999999999999", "out of range"},
		{"ab:", "decimal number"},
		{":1", "epoch"},
		{"AB:1", "epoch"},
		{"ab:-1", "decimal number"},
		{"ab:+1", "decimal number"},
		{"ab:1:2", "decimal number"},
		{strings.Repeat("a", 17) + ":1", "epoch"},
	} {
		_, resp, err := websocket.Dial(ctx, wsURL+"?after="+url.QueryEscape(bad.cursor), hdr)
		if err == nil {
			t.Fatalf("cursor %q: the socket opened", bad.cursor)
		}
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("cursor %q: %v (response %+v), want a 400", bad.cursor, err, resp)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), bad.says) {
			t.Errorf("cursor %q: the 400 does not say %q:\n%s", bad.cursor, bad.says, body)
		}
	}
	c, _, err := websocket.Dial(ctx, wsURL+"?after="+m[1], hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	stream := newEventStream(c)
	first, err := stream.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if first.Kind != runs.KindCaughtUp || first.Cursor != m[1] {
		t.Fatalf("first message at the page's cursor = %+v; want caught_up at %s (no second catch-up)", first, m[1])
	}
	if _, err := f.runs.Start(ctx, "flow", "once", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ev, err := stream.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != runs.KindRunStarted || ev.Catchup || ev.Seq == 0 {
		t.Fatalf("after caught_up = %+v, want the new run's live run_started", ev)
	}
}

// Each tree row lists the checkpoint's next tasks.
func TestCheckpointTreeRowsListNextTasks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	close(f.gate.release)
	if _, err := f.runs.Start(context.Background(), "flow", "nexts", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "nexts")
	res := f.get(t, "/threads/nexts/checkpoints")
	if res.code != http.StatusOK {
		t.Fatalf("tree = %d", res.code)
	}
	var cells []string
	for _, m := range regexp.MustCompile(`(?s)<td class="next">(.*?)</td>`).FindAllStringSubmatch(res.body, -1) {
		cells = append(cells, strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")), " "))
	}
	if got := strings.Join(cells, "|"); got != "__start__|fetch|slow|—" {
		t.Fatalf("next column = %q", got)
	}
}

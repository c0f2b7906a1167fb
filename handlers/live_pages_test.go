package handlers_test

import (
	"context"
	"net/http"
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
	if _, resp, err := websocket.Dial(ctx, wsURL+"?after=bad%20cursor", hdr); err == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed cursor: %v", err)
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

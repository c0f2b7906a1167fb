package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

// eventStream reads a thread websocket as a client does: each message is
// a JSON array of events, applied in order.
type eventStream struct {
	c     *websocket.Conn
	queue []runs.Event
	// messages counts the messages read, sizes their event counts.
	sizes []int
}

func newEventStream(c *websocket.Conn) *eventStream {
	c.SetReadLimit(4 << 20)
	return &eventStream{c: c}
}

// message reads one message; it fails unless the message is a non-empty
// JSON array of events.
func (s *eventStream) message(ctx context.Context) ([]runs.Event, error) {
	typ, b, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	var evs []runs.Event
	if typ != websocket.MessageText || len(b) == 0 || b[0] != '[' {
		return nil, &wireError{string(b)}
	}
	if err := json.Unmarshal(b, &evs); err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		return nil, &wireError{string(b)}
	}
	s.sizes = append(s.sizes, len(evs))
	return evs, nil
}

// next returns the next event, reading a message when none is queued.
func (s *eventStream) next(ctx context.Context) (runs.Event, error) {
	for len(s.queue) == 0 {
		evs, err := s.message(ctx)
		if err != nil {
			return runs.Event{}, err
		}
		s.queue = evs
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

type wireError struct{ msg string }

func (e *wireError) Error() string {
	return "websocket message is not a non-empty JSON array of events: " + e.msg[:min(len(e.msg), 200)]
}

// A thread's whole catch-up fits in one message (it is far below
// MaxMessageBytes), so a tab parses one array, not an event per frame;
// live events then come in arrays too, in order, with no seq missing.
func TestThreadWebsocketBatchesEventsInArrays(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	close(f.gate.release)
	if _, err := f.runs.Start(ctx, "flow", "batched", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "batched")
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/threads/batched/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {f.srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	s := newEventStream(c)
	first, err := s.message(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 5 || first[len(first)-1].Kind != runs.KindCaughtUp || first[0].Kind != runs.KindRunStarted {
		t.Fatalf("first message holds %d events (%v … %v); want the whole catch-up, run_started to caught_up",
			len(first), first[0].Kind, first[len(first)-1].Kind)
	}
	for _, ev := range first {
		if !ev.Catchup {
			t.Fatalf("live event %+v in the catch-up message", ev)
		}
	}
	if _, err := f.runs.Start(ctx, "flow", "batched", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for {
		ev, err := s.next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ev.Seq)
		if ev.Kind == runs.KindRunFinished {
			break
		}
	}
	for i, q := range seqs {
		if q != seqs[0]+uint64(i) {
			t.Fatalf("live seqs %v: want consecutive (none lost, none repeated, in order)", seqs)
		}
	}
}

// slowCatchup is a run manager whose catch-up takes until the client goes
// away (a long history read when the tab closes).
type slowCatchup struct {
	*runs.Manager
	entered chan struct{}
}

func (s slowCatchup) Subscribe(ctx context.Context, _ string) ([]runs.Event, *runs.Subscription, error) {
	s.entered <- struct{}{}
	<-ctx.Done()
	return nil, nil, fmt.Errorf("read the checkpoints: %w", ctx.Err())
}

// logRecords is a slog handler that hands every record to the test.
type logRecords chan slog.Record

func (logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (c logRecords) Handle(_ context.Context, r slog.Record) error {
	c <- r
	return nil
}
func (c logRecords) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c logRecords) WithGroup(string) slog.Handler      { return c }

// A tab that closes while its catch-up is read is not a server error: the
// Studio's log says so at Debug, not at Error.
func TestThreadWebsocketClientLeavingDuringCatchupIsNotAnError(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := runs.NewManager(map[string]engine.Compiled{"flow": flowGraph(t, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if _, err := m.Start(ctx, "flow", "leaving", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(ctx, "leaving"); err != nil {
		t.Fatal(err)
	}
	runner := slowCatchup{Manager: m, entered: make(chan struct{}, 1)}
	logs := make(logRecords, 16)
	r := chi.NewRouter()
	handlers.Routes{Runs: runner, Logger: slog.New(logs)}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(srv.Close)

	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/threads/leaving/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-runner.entered:
	case <-ctx.Done():
		t.Fatal("the catch-up never started")
	}
	c.CloseNow()
	select {
	case rec := <-logs:
		if rec.Level >= slog.LevelError {
			t.Fatalf("a client leaving during the catch-up was logged at %v: %q", rec.Level, rec.Message)
		}
	case <-ctx.Done():
		t.Fatal("the handler logged nothing when the client left")
	}
}

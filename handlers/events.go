package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/runs"
)

// writeTimeout bounds one websocket write: a tab that stops reading is
// closed instead of holding its subscription.
const writeTimeout = 5 * time.Second

// MaxMessageBytes is the size at which a websocket message stops taking
// more events: a burst is split into messages of about this size (a
// message holds at least one event, whatever its size).
const MaxMessageBytes = 64 << 10

// ThreadEvents answers GET /threads/{thread}/ws?after=<cursor>: a
// websocket that sends the thread's catch-up, then its live events. With
// after (the cursor the thread page was rendered at, or of the last event
// a reconnecting tab applied) the catch-up is only the live events after
// it, when the Runner still holds them; a malformed cursor is a 400 (and
// no upgrade), saying what is wrong with it (runs.CheckCursor). Only
// the Studio's own origin (and Routes.OriginPatterns) may connect:
// coder/websocket refuses other origins with 403. The browser never sends
// anything but the close handshake.
//
// # Wire format
//
// Every message is a text message holding a JSON array of one or more
// runs.Event objects, in the order they happened; a client applies them
// in array order, then the next message's. A message holds every event
// that was waiting when it was written (up to about MaxMessageBytes): a
// run emits hundreds of events in a burst, and one message per event
// would cost every tab, and the server, a frame, a wake-up and a parse
// per event. A tab that keeps up gets each event as soon as it happens,
// alone in its array, so batching adds no delay. Live events are encoded
// once for all tabs (runs.Event.Encoded); a message is those bytes
// joined, never re-encoded per tab.
//
// A tab that falls runs.SubscriberBuffer events behind is dropped by the
// run manager, and its socket closed with status 1013 (try again later):
// it reconnects with the cursor of the last event it applied.
//
// # Limits
//
// Sockets are counted per client address (the connection's remote IP:
// behind a reverse proxy, every user shares the proxy's address, so raise
// SocketLimits.PerClient there) and in all (Routes.Sockets): a socket past
// either limit is accepted and closed at once with status 1013 and a
// message naming the limit, before the thread is even looked up. Catch-ups that read checkpoints
// take turns (SocketLimits.Catchups at a time), so a crowd of new sockets
// holds goroutines, not database connections.
func ThreadEvents(rt Routes) http.Handler {
	return threadEvents(rt, newSockets(rt.Sockets))
}

func threadEvents(rt Routes, limits *sockets) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		// The slot is taken first: a flood of sockets to many threads
		// must not reach the registry past the limits either.
		release, refused := limits.take(clientOf(r))
		if refused == "" {
			defer release()
			if _, err := rt.Runs.Thread(r.Context(), id); err != nil {
				fail(w, r, rt.Logger, err)
				return
			}
		}
		// The whole cursor is checked before the upgrade: once the
		// socket is open, a bad request can only be a close code.
		after := r.URL.Query().Get("after")
		if after != "" {
			if err := runs.CheckCursor(after); err != nil {
				fail(w, r, rt.Logger, fmt.Errorf("after: %w", err))
				return
			}
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: rt.OriginPatterns})
		if err != nil {
			return // Accept has answered (403 for a foreign origin)
		}
		defer c.CloseNow()
		if refused != "" {
			c.Close(websocket.StatusTryAgainLater, refused)
			return
		}
		c.SetReadLimit(1 << 10)
		ctx := c.CloseRead(r.Context())
		var catchup []runs.Event
		var sub *runs.Subscription
		err = limits.catchup(ctx, func() (err error) {
			if lr, ok := rt.Runs.(liveRunner); ok && after != "" {
				catchup, sub, err = lr.SubscribeFrom(ctx, id, after)
			} else {
				catchup, sub, err = rt.Runs.Subscribe(ctx, id)
			}
			return err
		})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				// The tab closed (or navigated away) during the
				// catch-up: nothing went wrong on the server.
				logger(rt.Logger).Debug("websocket: client left during catch-up", slog.String("thread", id), slog.Any("error", err))
				return
			}
			logger(rt.Logger).Error("websocket: subscribe", slog.String("thread", id), slog.Any("error", err))
			c.Close(websocket.StatusInternalError, "cannot read the thread")
			return
		}
		defer sub.Close()
		// msg is reused for every message of the connection.
		msg := make([]byte, 0, 4<<10)
		send := func() bool {
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			defer cancel()
			return c.Write(wctx, websocket.MessageText, msg) == nil
		}
		unsendable := func(err error) {
			logger(rt.Logger).Error("websocket: encode event", slog.String("thread", id), slog.Any("error", err))
			c.Close(websocket.StatusInternalError, "cannot encode an event")
		}
		for len(catchup) > 0 {
			var n int
			if msg, n, err = catchupMessage(msg[:0], catchup); err != nil {
				unsendable(err)
				return
			}
			if !send() {
				return
			}
			catchup = catchup[n:]
		}
		for {
			select {
			case ev, ok := <-sub.C:
				if ok {
					if msg, ok, err = liveMessage(msg[:0], ev, sub.C); err != nil {
						unsendable(err)
						return
					}
					if !send() {
						return
					}
				}
				if !ok {
					if sub.Dropped() {
						c.Close(websocket.StatusTryAgainLater, "fell behind the run; reconnect to catch up")
					}
					return
				}
			case <-ctx.Done():
				return
			}
		}
	})
}

// liveMessage appends to dst a message of first and the events waiting
// on c after it, as many as fit in MaxMessageBytes; it never waits for
// an event. open is false when it found c closed (after the events it
// took).
func liveMessage(dst []byte, first *runs.Event, c <-chan *runs.Event) (msg []byte, open bool, err error) {
	if dst, err = appendEvent(append(dst, '['), first); err != nil {
		return nil, false, err
	}
	for len(dst) < MaxMessageBytes {
		select {
		case ev, ok := <-c:
			if !ok {
				return append(dst, ']'), false, nil
			}
			if dst, err = appendEvent(append(dst, ','), ev); err != nil {
				return nil, false, err
			}
		default:
			return append(dst, ']'), true, nil
		}
	}
	return append(dst, ']'), true, nil
}

// catchupMessage appends to dst a message of the first events of evs, as
// many as fit in MaxMessageBytes (at least one), and says how many.
func catchupMessage(dst []byte, evs []runs.Event) (msg []byte, n int, err error) {
	dst = append(dst, '[')
	for n < len(evs) && (n == 0 || len(dst) < MaxMessageBytes) {
		if n > 0 {
			dst = append(dst, ',')
		}
		if dst, err = appendEvent(dst, &evs[n]); err != nil {
			return nil, 0, err
		}
		n++
	}
	return append(dst, ']'), n, nil
}

// appendEvent appends ev's JSON: the bytes encoded once for every tab
// when it was published, or, for catch-up events (never published),
// encoded here.
func appendEvent(dst []byte, ev *runs.Event) ([]byte, error) {
	if b := ev.Encoded(); b != nil {
		return append(dst, b...), nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode %s event of thread %q: %w", ev.Kind, ev.Thread, err)
	}
	return append(dst, b...), nil
}

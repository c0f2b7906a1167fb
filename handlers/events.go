package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/runs"
)

// writeTimeout bounds one websocket write: a tab that stops reading is
// closed instead of holding its subscription.
const writeTimeout = 5 * time.Second

// cursorPattern is what a live-log cursor looks like (runs: <epoch>:<seq>).
var cursorPattern = regexp.MustCompile(`^[0-9a-z]{1,16}:[0-9]{1,20}$`)

// ThreadEvents answers GET /threads/{thread}/ws?after=<cursor>: a
// websocket that sends the thread's catch-up, then its live events, one
// JSON runs.Event per message. With after (the cursor the thread page was
// rendered at, or of the last event a reconnecting tab applied) the
// catch-up is only the live events after it, when the Runner still holds
// them; a malformed cursor is a 400. Only the Studio's own origin (and Routes.OriginPatterns) may
// connect: coder/websocket refuses other origins with 403. The browser
// never sends anything but the close handshake.
func ThreadEvents(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "thread")
		if _, err := rt.Runs.Thread(id); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		after := r.URL.Query().Get("after")
		if after != "" && !cursorPattern.MatchString(after) {
			fail(w, r, rt.Logger, fmt.Errorf("%w: after %q is not a cursor (<epoch>:<seq>)", runs.ErrInvalidInput, after))
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: rt.OriginPatterns})
		if err != nil {
			return // Accept has answered (403 for a foreign origin)
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 10)
		ctx := c.CloseRead(r.Context())
		var catchup []runs.Event
		var sub *runs.Subscription
		if lr, ok := rt.Runs.(liveRunner); ok && after != "" {
			catchup, sub, err = lr.SubscribeFrom(ctx, id, after)
		} else {
			catchup, sub, err = rt.Runs.Subscribe(ctx, id)
		}
		if err != nil {
			logger(rt.Logger).Error("websocket: subscribe", slog.String("thread", id), slog.Any("error", err))
			c.Close(websocket.StatusInternalError, "cannot read the thread")
			return
		}
		defer sub.Close()
		send := func(ev runs.Event) bool {
			wctx, cancel := context.WithTimeout(ctx, writeTimeout)
			defer cancel()
			if b := ev.Encoded(); b != nil {
				return c.Write(wctx, websocket.MessageText, b) == nil
			}
			return wsjson.Write(wctx, c, ev) == nil
		}
		for _, ev := range catchup {
			if !send(ev) {
				return
			}
		}
		for {
			select {
			case ev, ok := <-sub.C:
				if !ok {
					if sub.Dropped() {
						c.Close(websocket.StatusTryAgainLater, "fell behind the run; reconnect to catch up")
					}
					return
				}
				if !send(ev) {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	})
}

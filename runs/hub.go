package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// SubscriberBuffer is how many events a subscriber may lag behind before
// it is dropped. A run never waits for a subscriber: a browser tab that
// stops reading loses its subscription (and reconnects), the run goes on.
const SubscriberBuffer = 256

// Subscription receives a thread's live events on C, in order. C is
// closed when the subscription ends: by Close, or because the subscriber
// fell SubscriberBuffer events behind (then Dropped reports true).
type Subscription struct {
	// C delivers the events. Every subscriber of the thread receives the
	// same *Event: it is never modified after it is sent, and must not
	// be modified by a receiver (copy it to change it).
	C <-chan *Event

	c       chan *Event
	hub     *hub
	mu      sync.Mutex
	closed  bool
	dropped bool
}

// Dropped reports whether the subscription ended because its reader was
// too slow.
func (s *Subscription) Dropped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() {
	s.hub.remove(s, false)
}

// Retention of a thread's live events (a reconnecting tab resumes from
// them; the triggers, edges and subgraph tasks a catch-up cannot rebuild
// from checkpoints come from them): the hub keeps the latest RetainEvents
// events of each thread, and fewer when they hold more than RetainBytes
// of JSON. A process restart loses them; pages then show what checkpoints
// and the run log (RunLog) keep.
const (
	RetainEvents = 10_000
	RetainBytes  = 8 << 20
)

// hub fans one thread's events out to its subscribers and keeps the
// latest of them (see RetainEvents). publish never blocks: a subscriber
// whose buffer is full is dropped.
type hub struct {
	mu sync.Mutex
	// epoch names this hub: a cursor from another process (or an older
	// hub of the thread) never matches, so it cannot resume from the
	// wrong log.
	epoch string
	seq   uint64
	subs  map[*Subscription]struct{}
	track tracker
	// log holds the retained events, oldest first; logBytes their size.
	log      []Event
	logBytes int
	// chunks are the replies still streaming (see KindMessageChunk).
	chunks streams
	// sink, while set, receives every published event's JSON: the
	// event log other processes follow (WithEventLog).
	sink func([]byte)
}

func newHub() *hub {
	return &hub{subs: map[*Subscription]struct{}{}, epoch: strconv.FormatUint(rand.Uint64()>>16, 36)}
}

// subscribeAt registers a subscriber and returns the cursor it starts
// after (every event it receives has a higher seq) and the replies still
// streaming, as catch-up events. Both are taken with the registration,
// under one lock: a chunk is either in a reply's text here or live on
// the subscription, never in both, so text shown from the one and then
// the other is never doubled.
func (h *hub) subscribeAt() (*Subscription, string, []Event) {
	c := make(chan *Event, SubscriberBuffer)
	s := &Subscription{C: c, c: c, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[s] = struct{}{}
	return s, h.cursorLocked(), h.chunks.snapshot()
}

func (h *hub) cursorLocked() string { return h.epoch + ":" + strconv.FormatUint(h.seq, 10) }

// cursor is where the thread's live log stands now.
func (h *hub) cursor() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cursorLocked()
}

// errCursorGone: the cursor is from another process, or the events after
// it are no longer retained; the subscriber gets a full catch-up instead.
var errCursorGone = errors.New("runs: cursor no longer resumable")

// logCursor is a parsed live-log cursor: the hub it names and the last
// event its holder applied.
type logCursor struct {
	epoch string
	after uint64
}

// maxEpochLen is the longest epoch a hub makes (a 48-bit number in base
// 36 has at most 10 digits), with room to spare.
const maxEpochLen = 16

// parseCursor reads a cursor as a hub writes it, <epoch>:<seq>.
func parseCursor(s string) (logCursor, error) {
	epoch, seqText, ok := strings.Cut(s, ":")
	bad := func(why string) (logCursor, error) {
		return logCursor{}, fmt.Errorf("%w: cursor %q is not <epoch>:<seq>: %s", ErrInvalidInput, clip(s), why)
	}
	if !ok {
		return bad("no ':'")
	}
	if epoch == "" || len(epoch) > maxEpochLen || strings.TrimLeft(epoch, "0123456789abcdefghijklmnopqrstuvwxyz") != "" {
		return bad("the epoch is 1 to 16 lower-case letters and digits")
	}
	if seqText == "" || strings.TrimLeft(seqText, "0123456789") != "" {
		return bad("the seq is a decimal number")
	}
	after, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return bad("the seq is out of range")
	}
	return logCursor{epoch: epoch, after: after}, nil
}

// CheckCursor reports why s cannot be a cursor for SubscribeFrom, or nil:
// a caller that answers a bad cursor differently from a failed
// subscription (the websocket, with a 400 before it upgrades) checks it
// first. Errors wrap ErrInvalidInput and say what is wrong.
func CheckCursor(s string) error {
	_, err := parseCursor(s)
	return err
}

// resume registers a subscriber and returns the retained events after
// cur, then the replies still streaming as catch-up events, atomically:
// nothing is missed or sent twice between them and the subscription (a
// chunk is in a reply's text or live, never both).
func (h *hub) resume(cur logCursor) ([]Event, *Subscription, string, error) {
	epoch, after := cur.epoch, cur.after
	c := make(chan *Event, SubscriberBuffer)
	s := &Subscription{C: c, c: c, hub: h}
	h.mu.Lock()
	defer h.mu.Unlock()
	if epoch != h.epoch || after > h.seq {
		return nil, nil, "", errCursorGone
	}
	var out []Event
	if after < h.seq {
		if len(h.log) == 0 || h.log[0].Seq > after+1 {
			return nil, nil, "", errCursorGone
		}
		i := int(after + 1 - h.log[0].Seq)
		out = append(out, h.log[i:]...)
	}
	// Chunks are not in the log: the text of the replies still
	// streaming stands for those the subscriber missed.
	out = append(out, h.chunks.snapshot()...)
	h.subs[s] = struct{}{}
	return out, s, h.cursorLocked(), nil
}

// retained returns a copy of the retained events.
func (h *hub) retained() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.log...)
}

func (h *hub) publish(evs ...Event) { h.publishFrom(false, true, evs) }

// setSink sets (or, with nil, clears) the hub's sink.
func (h *hub) setSink(f func([]byte)) {
	h.mu.Lock()
	h.sink = f
	h.mu.Unlock()
}

// publishRemote publishes events another process published (and
// annotated) to its hub: this hub's tracker, which never saw the run,
// leaves them as they are.
func (h *hub) publishRemote(evs ...Event) { h.publishFrom(true, true, evs) }

// backfill retains events another process published before this hub
// followed it, without sending them to the subscribers (who have them,
// or their outcome, in their catch-up): a catch-up reads their details
// (triggers, durations) from the log as it does for live ones.
func (h *hub) backfill(evs ...Event) { h.publishFrom(true, false, evs) }

func (h *hub) publishFrom(remote, deliver bool, evs []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if ev.src != nil {
			h.track.observe(ev.src)
			ev.src = nil // it may hold the whole state
		}
		if ev.Kind == kindTrack {
			continue
		}
		switch {
		case ev.Kind == KindCheckpoint && ev.Path == "":
			h.chunks.settle(ev.Step)
		case ev.Kind == KindRunFinished:
			h.chunks.settle(-1)
		}
		if !remote {
			h.track.annotate(&ev)
		}
		h.seq++
		ev.Seq = h.seq
		if (deliver && len(h.subs) > 0) || (h.sink != nil && !remote) {
			ev.encoded, _ = json.Marshal(ev) // Event holds only plain data
		}
		if h.sink != nil && !remote {
			// Only this process's own events: another's are in the log
			// already, under their run.
			h.sink(ev.encoded)
		}
		h.retain(ev)
		if !deliver || len(h.subs) == 0 {
			continue
		}
		// One copy for every subscriber: sending the event itself would
		// copy its few hundred bytes into each subscriber's buffer.
		shared := &ev
		for s := range h.subs {
			select {
			case s.c <- shared:
			default:
				h.removeLocked(s, true)
			}
		}
	}
}

// retain appends ev to the log, dropping the oldest events beyond
// RetainEvents or RetainBytes.
func (h *hub) retain(ev Event) {
	h.log = append(h.log, ev)
	h.logBytes += ev.size()
	if len(h.log) <= RetainEvents && h.logBytes <= RetainBytes {
		return
	}
	// Drop a tenth at a time, so shifting the log costs O(1) per event;
	// the array is reused, so a long run holds no more than the bounds.
	drop := 0
	for drop < len(h.log)-1 && (len(h.log)-drop > RetainEvents*9/10 || h.logBytes > RetainBytes*9/10) {
		h.logBytes -= h.log[drop].size()
		drop++
	}
	if drop > 0 {
		n := copy(h.log, h.log[drop:])
		clear(h.log[n:])
		h.log = h.log[:n]
	}
}

// size estimates an event's retained bytes: its JSON when it was encoded,
// else its strings and slices plus a fixed overhead (16 bytes a string
// header, 48 a small struct).
func (e *Event) size() int {
	if e.encoded != nil {
		return len(e.encoded) + 256
	}
	n := 256 + len(e.Node) + len(e.Path) + len(e.TaskID) + len(e.Error) + len(e.Checkpoint) + len(e.RunID) + len(e.Parent) + len(e.Origin) + len(e.Answer) + len(e.Message) + len(e.Text)
	n += e.Call.size()
	for _, list := range [...][]string{e.Triggers, e.Writes, e.Next} {
		for _, s := range list {
			n += 16 + len(s)
		}
	}
	for _, b := range e.Bumps {
		n += 48 + len(b.Channel)
	}
	for _, ed := range e.Edges {
		n += 48 + len(ed[0]) + len(ed[1])
	}
	for _, v := range e.Values {
		n += 48 + len(v.Key) + len(v.JSON)
	}
	for _, i := range e.Interrupts {
		n += 48 + len(i.ID) + len(i.Node) + len(i.Preview)
	}
	return n
}

func (h *hub) remove(s *Subscription, dropped bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s, dropped)
}

func (h *hub) removeLocked(s *Subscription, dropped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed, s.dropped = true, dropped
	delete(h.subs, s)
	close(s.c)
}

// closeAll ends every subscription: the thread is gone (its only run was
// rejected), so nothing more will come.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		h.removeLocked(s, false)
	}
}

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// usage reports the hub's subscribers and the bytes its log retains.
func (h *hub) usage() (subs, bytes int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs), h.logBytes
}

// settle drops what the tracker holds of the thread's state once a run
// (or a state edit) is over: the thread may stay idle in memory a long
// time, and the state can be large.
func (h *hub) settle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.track.values.forget()
}

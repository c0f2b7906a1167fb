package runs

import (
	"encoding/json"
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
	// C delivers the events.
	C <-chan Event

	c       chan Event
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

// hub fans one thread's events out to its subscribers. publish never
// blocks: a subscriber whose buffer is full is dropped.
type hub struct {
	mu   sync.Mutex
	seq  uint64
	subs map[*Subscription]struct{}
}

func newHub() *hub { return &hub{subs: map[*Subscription]struct{}{}} }

func (h *hub) subscribe() *Subscription {
	c := make(chan Event, SubscriberBuffer)
	s := &Subscription{C: c, c: c, hub: h}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) publish(evs ...Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		h.seq++
		ev.Seq = h.seq
		if len(h.subs) > 0 {
			ev.encoded, _ = json.Marshal(ev) // Event holds only plain data
		}
		for s := range h.subs {
			select {
			case s.c <- ev:
			default:
				h.removeLocked(s, true)
			}
		}
	}
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

func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

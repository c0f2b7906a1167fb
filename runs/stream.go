package runs

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
)

// KindMessageChunk carries a piece of a chat model's reply streamed from
// inside a node (engine.MessageChunk), of the thread's graph or of a
// subgraph (then with its Path): Message is the reply's id (every
// chunk of one reply has it, and so does the reply the node returns),
// Text the chunk's text. A live one carries the new text only; a catch-up
// one (Catchup set) the whole text streamed so far.
//
// Chunks are not events of the thread's log: they take no seq, are not
// retained for cursors, are never written to the run log, and a
// catch-up rebuilds nothing from them but the text of the replies still
// streaming (see streams). Once the step's checkpoint is saved, the reply
// is in the state and pages show it from there.
const KindMessageChunk Kind = "message_chunk"

// Bounds of the text of replies still streaming a thread keeps for a
// catch-up: StreamTextBytes per reply (the rest is left out, and the
// catch-up event says it was cut), and the text of StreamReplies replies
// at once: when one more begins, the oldest's text is dropped, and its
// catch-up event says so (TextDropped) rather than leaving it out.
const (
	StreamTextBytes = 64 << 10
	StreamReplies   = 16
)

// textChunk is what a chunk must offer to be shown: models.Message does.
type textChunk interface {
	Text() string
	MessageID() string
}

// chunk converts a chunk of the run's graph or of a subgraph (a ReAct
// agent used as a node streams from there); a chunk without text or id
// is not forwarded. A subgraph's carries its Path and, like its task
// events, its own step; it is settled with the thread graph's step it
// runs in.
func (r *runEvents) chunk(mc engine.MessageChunk, now time.Time) (Event, bool) {
	c, ok := mc.Chunk.(textChunk)
	if !ok {
		return Event{}, false
	}
	text, id := c.Text(), c.MessageID()
	if text == "" || id == "" {
		return Event{}, false
	}
	ev := Event{Kind: KindMessageChunk, Thread: r.thread, Step: mc.Task.Step, Node: mc.Task.Name, TaskID: mc.Task.ID, Message: id, Text: text, Time: now, rootStep: mc.Task.Step}
	if ns := mc.Task.Namespace; ns != "" {
		ev.Path, ev.root = subgraphPath(ns)
		ev.rootStep = r.step
	}
	return ev, true
}

// streaming is the text of one reply still streaming. The text grows
// in a builder: a reply arrives in thousands of small chunks, and
// concatenating strings would copy the text so far for each of them.
type streaming struct {
	ev Event // the first chunk's details; Text is unused
	// step is the thread graph's step the reply streams in: its
	// checkpoint holds what the reply became.
	step int
	text strings.Builder
	cut  bool
	// dropped: its text was dropped for a newer reply's (see
	// StreamReplies); it keeps only its details.
	dropped bool
}

// streams holds a thread's replies still streaming, in the order they
// began; kept counts those whose text is kept.
type streams struct {
	order []string
	by    map[string]*streaming
	kept  int
}

func (s *streams) add(ev Event) {
	if s.by == nil {
		s.by = map[string]*streaming{}
	}
	st := s.by[ev.Message]
	if st == nil {
		if s.kept >= StreamReplies {
			s.dropOldest()
		}
		st = &streaming{ev: ev, step: ev.rootStep}
		st.ev.Text = ""
		s.by[ev.Message] = st
		s.order = append(s.order, ev.Message)
		s.kept++
	}
	if st.cut || st.dropped {
		return
	}
	if room := StreamTextBytes - st.text.Len(); len(ev.Text) > room {
		st.text.WriteString(textcut.Cut(ev.Text, room))
		st.cut = true
		return
	}
	st.text.WriteString(ev.Text)
}

// dropOldest drops the text of the oldest reply whose text is kept.
func (s *streams) dropOldest() {
	for _, id := range s.order {
		if st := s.by[id]; !st.dropped {
			st.text = strings.Builder{}
			st.dropped = true
			s.kept--
			return
		}
	}
}

// settle forgets the replies of steps up to step (their checkpoint holds
// them now), or all with step < 0.
func (s *streams) settle(step int) {
	kept := s.order[:0]
	for _, id := range s.order {
		if step >= 0 && s.by[id].step > step {
			kept = append(kept, id)
			continue
		}
		if !s.by[id].dropped {
			s.kept--
		}
		delete(s.by, id)
	}
	clear(s.order[len(kept):])
	s.order = kept
}

// snapshot is the replies still streaming as catch-up events.
func (s *streams) snapshot() []Event {
	out := make([]Event, 0, len(s.order))
	for _, id := range s.order {
		st := s.by[id]
		ev := st.ev
		ev.Text, ev.Catchup, ev.Truncated, ev.TextDropped = st.text.String(), true, st.cut, st.dropped
		out = append(out, ev)
	}
	return out
}

// stream sends a chunk to the thread's subscribers and keeps its text
// for a catch-up. Like publish it never blocks: a subscriber whose buffer
// is full is dropped (it reconnects and gets the text so far).
func (h *hub) stream(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks.add(ev)
	if len(h.subs) == 0 {
		return
	}
	ev.encoded, _ = json.Marshal(ev)
	shared := &ev
	for s := range h.subs {
		select {
		case s.c <- shared:
		default:
			h.removeLocked(s, true)
		}
	}
}

// streamingNow is the replies still streaming, as catch-up events.
func (h *hub) streamingNow() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chunks.snapshot()
}

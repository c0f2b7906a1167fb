package runs

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

func TestValueStateOps(t *testing.T) {
	t.Parallel()
	base := map[string]any{"a": 1, "b": []string{"x"}, "gone": true}
	for _, tc := range []struct {
		name   string
		parent string
		bumped []string
		next   map[string]any
		want   map[string]string
	}{
		{"bumped keys on the same branch", "c1", []string{"a", "new", "gone", "branch:to:x"},
			map[string]any{"a": 2, "b": []string{"x"}, "new": "n"},
			map[string]string{"a": OpChanged, "new": OpAdded, "gone": OpRemoved}},
		{"a write of the same value still bumps", "c1", []string{"a"},
			map[string]any{"a": 1, "b": []string{"x"}, "gone": true},
			map[string]string{"a": OpChanged}},
		{"a fork compares values", "c0", nil,
			map[string]any{"a": 1, "b": []string{"y"}, "new": 3},
			map[string]string{"b": OpChanged, "new": OpAdded, "gone": OpRemoved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v valueState
			v.next("c1", "", base)
			for _, b := range tc.bumped {
				v.bump(b)
			}
			ops, known := v.next("c2", tc.parent, tc.next)
			if !known || !maps.Equal(ops, tc.want) {
				t.Fatalf("ops = %v (known %v), want %v", ops, known, tc.want)
			}
		})
	}
	var v valueState
	v.bump("a")
	if ops, known := v.next("c1", "c0", base); known || !maps.Equal(ops, map[string]string{"a": OpChanged}) {
		t.Fatalf("first checkpoint seen: ops %v known %v; want unknown, with the bumped key marked", ops, known)
	}
}

// The hub keeps at most RetainEvents events; a cursor whose next event
// was dropped cannot resume, a recent one can.
func TestHubRetentionIsBounded(t *testing.T) {
	t.Parallel()
	h := newHub()
	for i := range RetainEvents + 500 {
		h.publish(Event{Kind: KindTaskStarted, Node: "n", TaskID: strconv.Itoa(i)})
	}
	if n := len(h.log); n > RetainEvents || n < RetainEvents*8/10 {
		t.Fatalf("log holds %d events, want at most %d and most of them", n, RetainEvents)
	}
	for i := 1; i < len(h.log); i++ {
		if h.log[i].Seq != h.log[i-1].Seq+1 {
			t.Fatalf("log has a gap at %d", i)
		}
	}
	if _, _, _, err := h.resume(logCursor{h.epoch, 1}); !errors.Is(err, errCursorGone) {
		t.Fatalf("resume from a dropped event: %v", err)
	}
	at := h.seq - 3
	evs, sub, _, err := h.resume(logCursor{h.epoch, at})
	if err != nil || len(evs) != 3 || evs[0].Seq != at+1 {
		t.Fatalf("resume 3 events back: %d events, %v", len(evs), err)
	}
	sub.Close()

	// Bytes bound the log before the count does: 200 events of 64 KiB
	// (an error text is kept as it is, unlike a checkpoint's values,
	// which the tracker replaces) are over RetainBytes.
	big := newHub()
	huge := strings.Repeat("v", 64<<10)
	const published = 200
	for i := range published {
		big.publish(Event{Kind: KindTaskFailed, Node: "n", TaskID: strconv.Itoa(i), Error: huge})
	}
	if published*len(huge) <= RetainBytes {
		t.Fatalf("the test publishes %d bytes, not over RetainBytes (%d)", published*len(huge), RetainBytes)
	}
	if big.logBytes > RetainBytes || big.logBytes < RetainBytes/2 {
		t.Fatalf("log holds %d bytes, want at most %d and most of that", big.logBytes, RetainBytes)
	}
	if n := len(big.log); n >= published || big.log[0].Seq == 1 || big.log[n-1].Seq != published {
		t.Fatalf("log holds %d events (seq %d to %d), want the oldest dropped and the newest kept", n, big.log[0].Seq, big.log[n-1].Seq)
	}
}

// When a run ends the hub's tracker keeps the state's keys, not its
// values: an idle thread does not hold its whole state. A run that goes
// on from the last checkpoint is still diffed; a fork gets a reset.
func TestHubForgetsTheStateWhenARunEnds(t *testing.T) {
	t.Parallel()
	h := newHub()
	big := strings.Repeat("x", 1<<20)
	ckpt := func(id, parent string, n int) Event {
		e := engine.CheckpointSaved{Config: checkpoints.Config{ThreadID: "t", CheckpointID: id}, Values: map[string]any{"big": big, "n": n}}
		if parent != "" {
			e.Parent = &checkpoints.Config{ThreadID: "t", CheckpointID: parent}
		}
		return Event{Kind: KindCheckpoint, Checkpoint: id, src: e}
	}
	h.publish(ckpt("c1", "", 1))
	h.settle()
	for k, v := range h.track.values.values {
		if v != nil {
			t.Fatalf("after the run the tracker still holds the value of %q", k)
		}
	}
	h.publish(Event{Kind: kindTrack, src: engine.BarrierApplied{Bumps: []engine.ChannelBump{{Channel: "n", Old: 1, New: 2}}, Updated: []string{"n"}}})
	h.publish(ckpt("c2", "c1", 2))
	if last := h.log[len(h.log)-1]; last.Reset || len(last.Values) != 1 || last.Values[0].Key != "n" || last.Values[0].Op != OpChanged {
		t.Fatalf("a resume after the run ended: values %+v (reset %v), want n changed", last.Values, last.Reset)
	}
	h.settle()
	h.publish(ckpt("c3", "c1", 3))
	if last := h.log[len(h.log)-1]; !last.Reset || len(last.Values) != 2 {
		t.Fatalf("a fork after the run ended: values %+v (reset %v), want the whole state again", last.Values, last.Reset)
	}
}

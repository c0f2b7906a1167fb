package handlers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/runs"
)

// The events waiting when a tab's writer wakes go out as one array, in
// order; a closed subscription is reported after the events it still
// held; a burst bigger than MaxMessageBytes is split.
func TestLiveMessageTakesWhatIsWaiting(t *testing.T) {
	t.Parallel()
	ev := func(node string) runs.Event { return runs.Event{Kind: runs.KindTaskFinished, Node: node, Thread: "t"} }
	decode := func(t *testing.T, msg []byte) []string {
		t.Helper()
		var evs []runs.Event
		if err := json.Unmarshal(msg, &evs); err != nil {
			t.Fatalf("message %.200s: %v", msg, err)
		}
		var nodes []string
		for _, e := range evs {
			nodes = append(nodes, e.Node)
		}
		return nodes
	}
	tests := []struct {
		name    string
		waiting []string
		closed  bool
		want    string
		open    bool
	}{
		{"alone", nil, false, "a", true},
		{"waiting ones join", []string{"b", "c"}, false, "a b c", true},
		{"closed after its events", []string{"b"}, true, "a b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := make(chan *runs.Event, 8)
			for _, n := range tt.waiting {
				e := ev(n)
				c <- &e
			}
			if tt.closed {
				close(c)
			}
			first := ev("a")
			msg, open, err := liveMessage(nil, &first, c)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(decode(t, msg), " "); got != tt.want || open != tt.open {
				t.Fatalf("message %q (open %v), want %q (open %v)", got, open, tt.want, tt.open)
			}
		})
	}
	t.Run("split at the size cap", func(t *testing.T) {
		t.Parallel()
		big := runs.Event{Kind: runs.KindTaskFailed, Thread: "t", Error: strings.Repeat("x", MaxMessageBytes/4)}
		c := make(chan *runs.Event, 8)
		for range 8 {
			c <- &big
		}
		msg, _, err := liveMessage(nil, &big, c)
		if err != nil {
			t.Fatal(err)
		}
		n := len(decode(t, msg))
		if n < 2 || n > 5 || len(c) != 9-n {
			t.Fatalf("a message took %d events of %d bytes (%d left waiting); want about MaxMessageBytes worth", n, MaxMessageBytes/4, len(c))
		}
	})
}

// A catch-up is split at MaxMessageBytes, and an event bigger than that
// still goes out, alone.
func TestCatchupMessageSplitsBySize(t *testing.T) {
	t.Parallel()
	small := runs.Event{Kind: runs.KindBarrier, Thread: "t", Catchup: true}
	huge := runs.Event{Kind: runs.KindTaskFailed, Thread: "t", Catchup: true, Error: strings.Repeat("x", 2*MaxMessageBytes)}
	evs := []runs.Event{huge, small, small}
	var counts []int
	for len(evs) > 0 {
		msg, n, err := catchupMessage(nil, evs)
		if err != nil {
			t.Fatal(err)
		}
		var got []runs.Event
		if err := json.Unmarshal(msg, &got); err != nil || len(got) != n {
			t.Fatalf("message of %d events decodes to %d (%v)", n, len(got), err)
		}
		counts = append(counts, n)
		evs = evs[n:]
	}
	if len(counts) != 2 || counts[0] != 1 || counts[1] != 2 {
		t.Fatalf("messages of %v events; want the huge event alone, then the two small ones", counts)
	}
}

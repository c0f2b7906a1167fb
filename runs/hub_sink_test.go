package runs

import "testing"

// TestHubSinksOnlyItsOwnEvents: events another process published
// (publishRemote, backfill) never go to the hub's sink, which writes the
// local run's events to the event log: they are in the log already,
// under their own run, and writing them again would put them under this
// process's run and fence.
func TestHubSinksOnlyItsOwnEvents(t *testing.T) {
	h := newHub()
	var sunk [][]byte
	h.setSink(func(b []byte) { sunk = append(sunk, b) })
	h.publishRemote(Event{Kind: KindRunFinished, Thread: "t", RunID: "other"})
	h.backfill(Event{Kind: KindTaskStarted, Thread: "t", RunID: "other"})
	if len(sunk) != 0 {
		t.Fatalf("%d remote or backfilled events went to the sink", len(sunk))
	}
	h.publish(Event{Kind: KindTaskStarted, Thread: "t"})
	if len(sunk) != 1 {
		t.Fatalf("the hub's own event: %d sunk, want 1", len(sunk))
	}
}

package runs

import (
	"strconv"
	"strings"
	"testing"
)

// A reply's text grows in place: adding a chunk costs no copy of the text
// so far, so a reply of many small chunks allocates a few times, not once
// a chunk.
//
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestStreamsAddDoesNotCopyTheTextSoFar(t *testing.T) {
	const chunks = 4096
	allocs := testing.AllocsPerRun(5, func() {
		var s streams
		for range chunks {
			s.add(Event{Message: "m", Text: "tok "})
		}
	})
	if allocs > 64 {
		t.Fatalf("%v allocations for a reply of %d chunks; want a few (a growing buffer)", allocs, chunks)
	}
}

// The text kept is cut at StreamTextBytes on a rune boundary, and the
// catch-up says so.
func TestStreamsCutAtTheBound(t *testing.T) {
	t.Parallel()
	var s streams
	piece := strings.Repeat("é", 1000) // 2000 bytes
	for range StreamTextBytes/len(piece) + 2 {
		s.add(Event{Message: "m", Text: piece})
	}
	snap := s.snapshot()
	if len(snap) != 1 || !snap[0].Truncated || len(snap[0].Text) != StreamTextBytes-StreamTextBytes%2 || !strings.HasPrefix(strings.Repeat("é", StreamTextBytes), snap[0].Text) {
		t.Fatalf("snapshot: %d events, truncated %v, %d bytes", len(snap), len(snap) == 1 && snap[0].Truncated, len(snap[0].Text))
	}
}

// BenchmarkStreamsAdd adds a 64 KiB reply in 4-byte chunks.
func BenchmarkStreamsAdd(b *testing.B) {
	const chunk = "tok "
	for b.Loop() {
		var s streams
		for range StreamTextBytes / len(chunk) {
			s.add(Event{Message: "m", Text: chunk})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(StreamTextBytes/len(chunk)), "ns/chunk")
}

// A reply beginning while StreamReplies others stream drops the text of
// the oldest, whose catch-up event says so: no reply is left out.
func TestStreamsDropTheOldestTextBeyondTheBound(t *testing.T) {
	t.Parallel()
	var s streams
	for i := range StreamReplies + 1 {
		s.add(Event{Message: "m" + strconv.Itoa(i), Step: 1, Text: "text " + strconv.Itoa(i)})
	}
	s.add(Event{Message: "m0", Step: 1, Text: " more"})
	snap := s.snapshot()
	if len(snap) != StreamReplies+1 {
		t.Fatalf("%d replies in the catch-up; want all %d", len(snap), StreamReplies+1)
	}
	if first := snap[0]; first.Message != "m0" || !first.TextDropped || first.Text != "" {
		t.Fatalf("the oldest reply: %+v; want m0 with its text dropped", first)
	}
	for i, ev := range snap[1:] {
		if want := "text " + strconv.Itoa(i+1); ev.TextDropped || ev.Text != want {
			t.Fatalf("reply %d: %+v; want its text %q", i+1, ev, want)
		}
	}
	s.settle(1)
	s.add(Event{Message: "n", Step: 2, Text: "new"})
	if snap := s.snapshot(); len(snap) != 1 || snap[0].Text != "new" || s.kept != 1 {
		t.Fatalf("after the step: %+v (kept %d); want the new reply alone", snap, s.kept)
	}
}

package pgevents_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs/pgevents"
)

// BenchmarkAppendOneEvent measures one event's Append: one round trip
// (lock, insert, notify) and a commit.
func BenchmarkAppendOneEvent(b *testing.B) {
	a, _ := setup(b)
	ctx := context.Background()
	body := [][]byte{[]byte(`{"event": "values", "data": {"messages": ["hello"]}}`)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, _, err := pgevents.Append(ctx, a, "t", "r", 0, body); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

// BenchmarkAppendToDelivered measures, for one event at a time, from the
// call of Append on one pool to the follower's call on another: commit,
// NOTIFY, the tailer's read and delivery.
func BenchmarkAppendToDelivered(b *testing.B) {
	a, w := setup(b)
	ctx := context.Background()
	tl := newTailer(b, a, nil)
	delivered := make(chan struct{}, 1)
	defer tl.Follow("t", 0, func([]pgevents.Row) { delivered <- struct{}{} })()
	// Wait for the LISTEN, through a first delivery.
	if _, _, err := pgevents.Append(ctx, w, "t", "r", 0, [][]byte{[]byte(`{}`)}); err != nil {
		b.Fatal(err)
	}
	<-delivered
	body := [][]byte{[]byte(`{"event": "values", "data": {"messages": ["hello"]}}`)}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, _, err := pgevents.Append(ctx, w, "t", "r", 0, body); err != nil {
			b.Fatal(err)
		}
		<-delivered
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}

// BenchmarkWriterAddToDelivered is what a run's single event costs to
// reach another replica's follower through a Writer: its batching wait
// (FlushAfter, 2 ms) comes on top of BenchmarkAppendToDelivered.
func BenchmarkWriterAddToDelivered(b *testing.B) {
	a, p := setup(b)
	tl := newTailer(b, a, nil)
	delivered := make(chan struct{}, 1)
	defer tl.Follow("t", 0, func([]pgevents.Row) { delivered <- struct{}{} })()
	w := pgevents.NewWriter(p, "t", "r", 0, nil)
	defer w.Close()
	w.Add([]byte(`{}`))
	<-delivered
	body := []byte(`{"event": "values", "data": {"messages": ["hello"]}}`)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		w.Add(body)
		<-delivered
		lat = append(lat, time.Since(start))
	}
	reportPercentiles(b, lat)
}

package channels

import (
	"testing"
)

// The runtime's budget is about 1,000 ns and 10 allocations per superstep
// for a one-node counter loop; a channel update is a small part of it.

func BenchmarkLastValueUpdate(b *testing.B) {
	ch := LastValueOf[int]()
	values := []any{1000}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Update(values); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/update")
}

func BenchmarkBinaryOperatorAdd(b *testing.B) {
	ch := BinaryOperatorOf[int](AddReducer)
	values := []any{1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Update(values); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/update")
}

// BenchmarkBinaryOperatorAppend appends one message per step to a list
// that an Overwrite resets every 1,024 steps, so the list stays a realistic
// size however large b.N gets.
func BenchmarkBinaryOperatorAppend(b *testing.B) {
	ch := BinaryOperatorOf[[]string](AppendReducer)
	values := []any{"message"}
	reset := []any{Overwrite{Value: []string{}}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		vs := values
		if i++; i%1024 == 0 {
			vs = reset
		}
		if _, err := ch.Update(vs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/append")
}

// BenchmarkTopicUpdate is the __pregel_tasks pattern: a non-accumulating
// topic that receives one value in a step and is cleared by the next.
func BenchmarkTopicUpdate(b *testing.B) {
	type send struct {
		Node string
		Arg  any
	}
	ch := TopicOf[send](false)
	values := []any{send{Node: "worker", Arg: 1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ch.Update(values); err != nil {
			b.Fatal(err)
		}
		if _, err := ch.Update(nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/step")
}

// BenchmarkUntouchedChannels is what a step costs every channel it did not
// write: an empty Update, a Consume and a Finish.
func BenchmarkUntouchedChannels(b *testing.B) {
	chans := allKinds()
	b.ReportAllocs()
	for b.Loop() {
		for _, ch := range chans {
			if _, err := ch.Update(nil); err != nil {
				b.Fatal(err)
			}
			ch.Finish()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(chans)), "ns/channel")
}

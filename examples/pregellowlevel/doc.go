// Package pregellowlevel shows the low-level Pregel API, for people who
// port a hand-written dataflow and want to say exactly which channel
// triggers which node and what each write does, with no StateGraph in
// between. It is also the smallest graph to watch channel versions bump in
// the Studio.
//
// # The graph
//
//	input ─▶ split ─▶ foo (string of input)
//	               └▶ bar (input + 333) ─▶ total ─▶ baz (input + bar)
//	                         input ───────▶ total (read, not a trigger)
//
// With input 123 the output is {"foo": "123", "bar": 456, "baz": 579}.
//
// # What it demonstrates
//
//   - Channels declared by hand (channels.NewLastValue with a Go type) and
//     ChannelTypes so checkpointed values decode back to int and string.
//   - A node reading one channel raw (NodeBuilder.SubscribeOnly: the input
//     is the int) and a node reading several (SubscribeTo with read, plus
//     ReadFrom: the input is a map keyed by channel name).
//   - Writers: WriteEntry with a Mapper (one output, transformed per
//     channel) and WriteTuple (one output turned into any number of
//     channel writes).
//   - Two supersteps: split runs when input is written, total when split's
//     write to bar bumps bar's version.
package pregellowlevel

// Package channels implements the channel kinds of the Pregel runtime:
// LastValue, LastValueAfterFinish, BinaryOperator (reducers, with
// Overwrite), EphemeralValue, Topic, NamedBarrierValue and its after-finish
// variant, UntrackedValue and AnyValue, each with upstream LangGraph's
// update / consume / finish / checkpoint / restore rules.
//
// The engine owns channel instances; nothing here knows about nodes, tasks
// or persistence beyond encoding a channel's saved form as JSON.
package channels

// Package cache holds the node-result cache: the Cache interface the engine
// uses to skip a node whose input it has seen before, an in-memory
// implementation honouring TTL, and a conformance suite both it and the
// Postgres implementation (in its own sub-package) must pass.
//
// Entries are keyed by a namespace (node identity and name) and a hash of
// the node's canonical input; values are the node's successful writes.
// Nothing here knows how a graph runs or how it is served.
package cache

// Package store is the long-term memory graphs read and write across
// threads: namespaced JSON items, typed filters, TTL, and semantic search
// over embedded fields.
//
// It holds the Store interface and its operations, namespace validation,
// the filter and index-path languages, an in-memory implementation, the
// embedders, and a conformance suite (sub-package storetest) that every
// implementation passes. The Postgres (pgvector) implementation lives in its
// own sub-package. Nothing here knows about HTTP or about the engine.
package store

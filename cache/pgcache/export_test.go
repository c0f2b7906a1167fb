package pgcache

// SweepBatch exposes the sweep batch size so a test can cross it.
const SweepBatch = sweepBatch

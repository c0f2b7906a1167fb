// Package checkpoints defines what a checkpoint is and how it is saved: the
// Checkpoint and metadata types, pending writes with their special slots,
// the Saver interface, an in-memory saver that keeps full history, and the
// conformance suite (sub-package checkpointstest) every saver must pass.
//
// The Postgres saver lives in its own sub-package so that this package and
// the engine never import a database driver. Nothing here knows about HTTP
// or about how a graph runs; the engine decides what to save and when.
package checkpoints

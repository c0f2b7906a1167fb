package checkpoints

import "context"

// TaskWrites are the writes of one task, as PutWrites takes them.
type TaskWrites struct {
	TaskID   string
	TaskPath string
	Writes   []Write
}

// StepSaver is a Saver that can save a superstep's task writes together
// with the checkpoint that follows them, in one transaction (for the
// Postgres saver, one round trip). Durability "sync" needs both before the
// next superstep; sent apart they cost two round trips and two commits.
// The engine finds it by type assertion, as pgx finds optional tracer
// extensions.
type StepSaver interface {
	Saver
	// PutStep is PutWrites(cfg, w.Writes, w.TaskID, w.TaskPath) for each
	// element w of writes, in order, then Put(cfg, cp, md, newVersions),
	// all or nothing: when it fails nothing is saved. The writes are saved
	// against cfg.CheckpointID, the new checkpoint's parent, so writes
	// need a checkpoint id (ErrInvalidConfig otherwise); without writes it
	// is exactly Put. Arguments are checked as Put and PutWrites check
	// them, before anything is written.
	//
	// Unlike Put and PutWrites, PutStep takes ownership of what it is
	// given: the caller must not modify cp's maps, slices and values, md,
	// or the writes' values after the call. The memory saver keeps them
	// as they are instead of copying them; the engine builds them afresh
	// for every step (and gives a FrameSaver a Frame instead). The writes
	// slice and each TaskWrites' Writes slice are only lent for the call:
	// the engine reuses them for the next step, so a saver that keeps a
	// write keeps its Value, never those slices.
	PutStep(ctx context.Context, cfg Config, writes []TaskWrites, cp *Checkpoint, md Metadata, newVersions map[string]int64) (Config, error)
}

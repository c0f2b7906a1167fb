package checkpoints

import (
	"context"
	"errors"
)

// Fence is the lease token a Studio replica holds for a thread while it
// executes the thread's run (studio_thread_leases in Postgres). Token only
// grows: when another replica takes the run over, it bumps the token, and a
// write that still carries the old one is refused with ErrFenced instead of
// interleaving with the new holder's checkpoints.
type Fence struct {
	// Thread is the thread the lease is for; a fenced write must be to
	// this thread.
	Thread string
	// Token is the lease's fence as the holder took it.
	Token int64
}

type fenceKey struct{}

// WithFence returns ctx carrying f: a Saver that supports fences checks it
// in the same transaction as every checkpoint write made with the returned
// context (Put, PutStep, PutWrites; not deletes or other maintenance). A
// write to another thread than f.Thread is refused as a programming error.
//
// Fences are a Postgres concept (package pgsaver checks them with the
// studio_fence function): the Memory saver lives in a single process,
// where there is no other replica to be fenced out by, and ignores them.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the fence ctx carries, if any.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}

// ErrFenced means a fenced write was refused, and nothing of it written:
// the thread's lease is no longer held with the write's fence, because
// another replica took the run over (or the lease was released). The
// writer must stop working on the run; retrying cannot succeed.
var ErrFenced = errors.New("fenced out: another replica took over the thread")

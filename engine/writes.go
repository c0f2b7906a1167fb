package engine

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"unsafe"
)

// Writes is where a node added with AddNodeWrites (or AddNodeFuncWrites)
// puts its state update: each Set is one write, in order, exactly as if
// the node had returned Updates{{key, value}, ...} (one Set: Set(key,
// value)). The engine hands the node a Writes for each attempt and
// applies it when the node returns nil. The writes go into a buffer the
// task reuses, and for a node without retry policies the Writes itself
// costs no allocation either, where an Output boxes the update into an
// interface on every call.
//
// The writes are checked as a returned Output's are (an unknown key or a
// value of the wrong type fails the attempt with an ErrInvalidUpdate
// naming the node and key), and an attempt that fails, panics or is
// interrupted leaves nothing behind: the next attempt starts from an
// empty Writes.
//
// A Writes belongs to its call: what was Set when the node returns is
// its update, and Set is then a misuse. On a Writes kept for a later step
// or a retry, or used after the run, Set panics and the write is not
// applied. A goroutine the node left behind must not call Set either: it
// panics once the node's task has finished, and before that it races
// with the engine reading the update. Set is not safe for concurrent use.
type Writes struct {
	// t is the running *task while the attempt runs, nil once it is over
	// (cleared atomically: a goroutine the node left behind reads it).
	// For a node that cannot retry it is the task context's own t, which
	// is cleared when the task finishes (execute).
	t unsafe.Pointer
}

// errWritesAfterReturn is the panic of Set on a Writes whose attempt is
// over.
const errWritesAfterReturn = "engine: Writes.Set called after its node returned; a Writes is valid only during the node call it was given to"

// Set writes value to the state key.
func (w *Writes) Set(key string, value any) {
	t := (*task)(atomic.LoadPointer(&w.t))
	if t == nil {
		panic(errWritesAfterReturn)
	}
	t.addWrite(key, value)
}

// writesFunc is the function of a node added with AddNodeWrites.
type writesFunc func(ctx context.Context, in any, w *Writes) error

// AddNodeWrites adds a node that receives the whole state and writes its
// update into w (see Writes) instead of returning an Output. To route
// with a Command, use AddNode.
func (g *StateGraph[S]) AddNodeWrites(name string, fn func(ctx context.Context, state S, w *Writes) error, opts ...NodeOption) *StateGraph[S] {
	return AddNodeFuncWrites(g, name, fn, opts...)
}

// AddNodeFuncWrites is AddNodeFunc for a node that writes its update into
// w (see Writes).
func AddNodeFuncWrites[S, T any](g *StateGraph[S], name string, fn func(ctx context.Context, in T, w *Writes) error, opts ...NodeOption) *StateGraph[S] {
	if fn == nil {
		g.errs = append(g.errs, fmt.Errorf("%w: node %q has a nil function", ErrInvalidGraph, name))
		return g
	}
	return g.addNode(name, reflect.TypeFor[T](), nil, func(ctx context.Context, in any, w *Writes) error {
		v, ok := asValue[T](in)
		if !ok {
			return fmt.Errorf("%w: node %q received %T, want %s", ErrInvalidUpdate, name, in, reflect.TypeFor[T]())
		}
		return fn(ctx, v, w)
	}, opts)
}

// callWrites runs a Writes node's attempt with a Writes armed for the
// call: an attempt that may be retried gets one disarmed when it returns
// (or panics); the execution's only attempt, the task context's, which
// execute disarms when the task finishes. It returns the Writes as the
// node's output, for stateWriter to check what Set wrote.
func (t *task) callWrites(ctx context.Context, f writesFunc) (any, error) {
	// Each attempt has a Writes of its own, never reused, so that one
	// kept past its call cannot write into another.
	var w *Writes
	if len(t.retryPolicies()) == 0 {
		// The execution's only attempt: its Writes is the task
		// pointer of the execution's context (fresh, never reused),
		// which execute sets and clears. It costs no allocation and no
		// store of its own.
		w = (*Writes)(unsafe.Pointer(&t.tctx.t))
	} else {
		w = &Writes{t: unsafe.Pointer(t)}
		defer atomic.StorePointer(&w.t, nil)
	}
	if err := f(ctx, t.input, w); err != nil {
		return nil, err
	}
	return w, nil
}

// retryPolicies are the task's node's retry policies: its own, else the
// graph's. Without any, a failed attempt is its execution's last.
func (t *task) retryPolicies() []RetryPolicy {
	if len(t.node.Retry) > 0 {
		return t.node.Retry
	}
	return t.l.g.cfg.Retry
}

// applyWrites validates a Writes node's update, which Set added to the
// task's writes (the stateWriter is a node's first writer, and an attempt
// starts with no writes), in place: each value as stateWriter checks a
// returned KV or Updates', with its channel's index.
func (w *stateWriter[S]) applyWrites(t *task) error {
	for i := range t.writes {
		kv := &t.writes[i]
		f, cv, err := w.g.checkKey(t.name, kv.Key, kv.Value)
		if err != nil {
			return err
		}
		kv.Value, t.wch[i] = cv, int32(w.refs.field[f])+1
	}
	return nil
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
)

// Interruption is a pause a node asked for: a value to show a person, and the
// id a resume answers it by.
type Interruption struct {
	// ID identifies the interrupt; it is stable across resumes of the same
	// checkpoint. Unlike upstream, two interrupts in one node have
	// distinct ids (the first keeps upstream's id, the hash of the task's
	// namespace; the k-th adds "#k").
	ID    string `json:"id"`
	Value any    `json:"value"`
	// Node and Namespace say where the interrupt happened.
	Node      string `json:"node,omitempty"`
	Namespace string `json:"ns,omitempty"`
}

// errInterruptSignal is what Interrupt returns to make the node stop; the
// node returns it (or any error wrapping it), but the task is marked
// interrupted even if the node swallows it.
var errInterruptSignal = errors.New("engine: node interrupted (return this error from the node)")

// IsInterrupt reports whether err is (or wraps) the error Interrupt
// returns: code that calls nodes or tools on a node's behalf (a tool
// runner catching tool failures) must let it through, not handle it.
func IsInterrupt(err error) bool { return errors.Is(err, errInterruptSignal) }

// Interrupt pauses the running node until a person answers. The first time
// it is reached it returns a non-nil error that the node must return; the
// run stops with an *Interrupted error listing the interrupt, and the
// thread resumes with Command{Resume: answer} (or a map keyed by interrupt
// id). On resume the node runs again from the top, and each Interrupt call
// returns, in call order, the answer it was given.
func Interrupt(ctx context.Context, value any) (any, error) {
	t := taskFrom(ctx)
	if t == nil {
		return nil, errors.New("engine: Interrupt called outside a node")
	}
	return t.interrupt(value)
}

func (t *task) interrupt(value any) (any, error) {
	t.imu.Lock()
	defer t.imu.Unlock()
	idx := t.intrIdx
	t.intrIdx++
	if idx < len(t.resume) {
		return t.resume[idx], nil
	}
	id := t.interruptID(idx)
	l := t.l
	if v, ok := l.resumeMap[id]; ok {
		t.resume = append(t.resume, v)
		return v, nil
	}
	if v, ok := l.takeNullResume(); ok {
		t.resume = append(t.resume, v)
		return v, nil
	}
	t.interrupts = append(t.interrupts, Interruption{ID: id, Value: value, Node: t.name, Namespace: l.ns})
	return nil, errInterruptSignal
}

// interruptID is the id of the idx-th interrupt of the task.
func (t *task) interruptID(idx int) string {
	ns := t.checkpointNS()
	if idx > 0 {
		ns += "#" + strconv.Itoa(idx)
	}
	return hash128Hex([]byte(ns))
}

type resumeState struct {
	mu         sync.Mutex
	nullResume any
	hasNull    bool
}

func (l *loop) takeNullResume() (any, bool) {
	l.rs.mu.Lock()
	defer l.rs.mu.Unlock()
	if !l.rs.hasNull {
		return nil, false
	}
	l.rs.hasNull = false
	return l.rs.nullResume, true
}

// isInterruptID reports whether s looks like an interrupt id (32 hex).
func isInterruptID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// pendingInterrupts lists the interrupts saved against the loaded
// checkpoint.
func (l *loop) pendingInterrupts() []Interruption {
	var out []Interruption
	for _, pw := range l.pending {
		if pw.Channel != interruptKey {
			continue
		}
		var is []Interruption
		if json.Unmarshal(pw.Value, &is) == nil {
			out = append(out, is...)
		}
	}
	return out
}

// applyCommand turns a Command given as run input into the null-task
// writes upstream uses: update writes, goto routes, and resume answers.
func (l *loop) applyCommand(ctx context.Context, cmd *Command) error {
	if !l.hasVersions() {
		return fmt.Errorf("%w: thread %q has no checkpoint to resume with a Command", ErrEmptyInput, l.opts.ThreadID)
	}
	if cmd.Update == nil && len(cmd.Goto) == 0 && cmd.Resume == nil {
		return fmt.Errorf("%w: the Command is empty", ErrEmptyInput)
	}
	var writes []KV
	if cmd.Update != nil {
		if l.g.mapUpdate == nil {
			return fmt.Errorf("%w: this graph takes no Command updates", ErrInvalidUpdate)
		}
		ws, err := l.g.mapUpdate(cmd.Update)
		if err != nil {
			return err
		}
		writes = append(writes, ws...)
	}
	for _, g := range cmd.Goto {
		switch d := g.(type) {
		case string:
			if d == End {
				continue
			}
			if _, ok := l.g.nodes[d]; !ok {
				return fmt.Errorf("%w: Command.Goto names unknown node %q", ErrInvalidUpdate, d)
			}
			writes = append(writes, KV{Key: branchPrefix + d})
		case Send:
			writes = append(writes, KV{Key: tasksChannel, Value: d})
		default:
			return fmt.Errorf("%w: Command.Goto holds %T; use node names or Sends", ErrInvalidUpdate, g)
		}
	}
	if cmd.Resume != nil {
		pending := l.pendingInterrupts()
		if m, ok := resumeMap(cmd.Resume); ok {
			for id := range m {
				if !containsInterrupt(pending, id) {
					return fmt.Errorf("%w: no pending interrupt has id %q", ErrInvalidUpdate, id)
				}
			}
			l.resumeMap = m
		} else {
			if len(pending) > 1 {
				return fmt.Errorf("%w: %w: %d interrupts are pending, so a single resume value is ambiguous; resume with a map from interrupt id to answer", ErrInvalidUpdate, ErrAmbiguousResume, len(pending))
			}
			writes = append(writes, KV{Key: resumeKey, Value: cmd.Resume})
		}
	}
	if len(writes) == 0 {
		return nil
	}
	if l.saver != nil {
		enc, err := encodeWrites(writes)
		if err != nil {
			return err
		}
		if err := l.putWrites(ctx, nullTaskID, enc); err != nil {
			return err
		}
		for _, w := range enc {
			l.pending = append(l.pending, pendingFor(nullTaskID, w))
		}
		return nil
	}
	// Without a checkpointer there is nothing to resume from; keep the
	// writes in memory for this run.
	for _, w := range writes {
		if w.Key == resumeKey {
			l.rs.nullResume, l.rs.hasNull = w.Value, true
			continue
		}
		l.nullWrites = append(l.nullWrites, w)
	}
	return nil
}

func containsInterrupt(is []Interruption, id string) bool {
	for _, i := range is {
		if i.ID == id {
			return true
		}
	}
	return false
}

// resumeMap reports whether v is a map from interrupt ids to answers.
func resumeMap(v any) (map[string]any, bool) {
	var m map[string]any
	switch x := v.(type) {
	case map[string]any:
		m = x
	case map[string]string:
		m = make(map[string]any, len(x))
		for k, s := range x {
			m[k] = s
		}
	default:
		return nil, false
	}
	if len(m) == 0 {
		return nil, false
	}
	for k := range m {
		if !isInterruptID(k) {
			return nil, false
		}
	}
	return m, true
}

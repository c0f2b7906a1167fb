package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/engine/channels"
)

// task is one node execution within a superstep.
type task struct {
	l        *loop
	id       string
	name     string
	node     *Node
	push     bool
	idx      int
	triggers []string
	input    any
	writes   []KV
	// cached: the writes came from the cache or from pending writes; the
	// node does not run.
	cached   bool
	cacheKey cache.Key
	useCache bool
	attempts int
	err      error
	mu       sync.Mutex // guards writes while a node emits concurrently
}

func (t *task) addWrite(channel string, v any) {
	t.writes = append(t.writes, KV{Key: channel, Value: v})
}

func (t *task) info() TaskInfo {
	path := pullKind
	if t.push {
		path = pushKind
	}
	return TaskInfo{ID: t.id, Name: t.name, Step: t.l.step, Triggers: t.triggers, Path: path, Index: t.idx, Namespace: t.l.ns, Input: t.input}
}

// less orders tasks as upstream's barrier does: pull tasks by node name,
// then push tasks by Send index.
func (t *task) less(o *task) bool {
	if t.push != o.push {
		return !t.push
	}
	if t.push {
		return t.idx < o.idx
	}
	return t.name < o.name
}

type taskCtxKey struct{}

func taskFrom(ctx context.Context) *task {
	t, _ := ctx.Value(taskCtxKey{}).(*task)
	return t
}

// Attempt returns the 1-based attempt number of the running node (0 when
// ctx does not belong to a node).
func Attempt(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.attempts
	}
	return 0
}

// Step returns the superstep of the running node (-1 outside a node).
func Step(ctx context.Context) int {
	if t := taskFrom(ctx); t != nil {
		return t.l.step
	}
	return -1
}

// Emit sends a custom event from the running node to the run's listener
// (stream mode "custom"). It is a no-op outside a node or when nobody
// listens.
func Emit(ctx context.Context, payload any) {
	t := taskFrom(ctx)
	if t == nil || t.l.emit == nil {
		return
	}
	t.l.emit.send(Custom{Task: t.info(), Payload: payload})
}

// call runs the node function, turning a panic into a *PanicError.
func (t *task) call(ctx context.Context) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	out, err = t.node.Func(ctx, t.input)
	if err != nil {
		return nil, err
	}
	for _, w := range t.node.Writers {
		if err := w.write(t, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// execute runs the task with its retry policies and commits the result.
func (t *task) execute(ctx context.Context) error {
	l := t.l
	policies := t.node.Retry
	if len(policies) == 0 {
		policies = l.g.cfg.Retry
	}
	tctx := context.WithValue(ctx, taskCtxKey{}, t)
	start := time.Now()
	for {
		t.attempts++
		t.writes = t.writes[:0]
		if l.emit != nil {
			l.emit.send(TaskStarted{Task: t.info(), Attempt: t.attempts})
		}
		_, err := t.call(tctx)
		if err == nil {
			return l.commitSuccess(ctx, t, time.Since(start))
		}
		if ctx.Err() != nil {
			// A sibling failed or the run was cancelled: not this task's fault.
			t.writes = t.writes[:0]
			return ctx.Err()
		}
		p, ok := policyFor(policies, err)
		if !ok || t.attempts >= p.maxAttempts() {
			t.err = err
			l.commitError(ctx, t)
			return fmt.Errorf("node %q: %w", t.name, err)
		}
		wait := p.backoff(t.attempts)
		if l.emit != nil {
			l.emit.send(TaskRetried{Task: t.info(), Attempt: t.attempts, Err: err, Backoff: wait})
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return err
		}
	}
}

// readInput builds a pull task's input from the current channels.
func (l *loop) readInput(n *Node) (any, bool, error) {
	if n.input != nil {
		v, err := n.input(l.reader())
		return v, true, err
	}
	var in any
	if n.ReadSingle {
		v, ok := l.chans[n.Channels[0]].Get()
		if !ok {
			return nil, false, nil
		}
		in = v
	} else {
		m := make(map[string]any, len(n.Channels))
		for _, c := range n.Channels {
			if v, ok := l.chans[c].Get(); ok {
				m[c] = v
			}
		}
		in = m
	}
	if n.Mapper != nil {
		v, err := n.Mapper(in)
		if err != nil {
			return nil, false, fmt.Errorf("node %q: input mapper: %w", n.Name, err)
		}
		in = v
	}
	return in, true, nil
}

// reader reads channels; StateGraph input builders use it.
type reader interface {
	read(channel string) (any, bool)
}

type chanReader map[string]channels.Channel

func (r chanReader) read(c string) (any, bool) {
	ch, ok := r[c]
	if !ok {
		return nil, false
	}
	return ch.Get()
}

func (l *loop) reader() reader { return chanReader(l.chans) }

// localRead gives the state as it would be after applying only this task's
// writes: what a conditional edge sees (upstream's fresh local read).
func (t *task) localRead() (reader, error) {
	l := t.l
	touched := map[string][]any{}
	for _, w := range t.writes {
		if _, ok := l.chans[w.Key]; ok && !reservedWrite(w.Key) {
			touched[w.Key] = append(touched[w.Key], w.Value)
		}
	}
	if len(touched) == 0 {
		return l.reader(), nil
	}
	r := make(chanReader, len(l.chans))
	for name, ch := range l.chans {
		r[name] = ch
	}
	for name, vals := range touched {
		c := l.chans[name].Copy()
		if _, err := c.Update(vals); err != nil {
			return nil, fmt.Errorf("at key %q: %w", name, err)
		}
		r[name] = c
	}
	return r, nil
}

// decodeArg turns a Send argument read back from a checkpoint into the
// target node's input type.
func decodeArg(n *Node, arg any) (any, error) {
	raw, ok := arg.(json.RawMessage)
	if !ok {
		return arg, nil
	}
	typ := n.inputType()
	if typ == nil {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return v, nil
	}
	p := reflect.New(typ)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fmt.Errorf("send to %q: argument does not decode into %s: %w", n.Name, typ, err)
	}
	return p.Elem().Interface(), nil
}

// UnmarshalJSON keeps Arg as raw JSON: the target node's input type, known
// only when the task is prepared, decides how to decode it.
func (s *Send) UnmarshalJSON(b []byte) error {
	var w struct {
		Node string          `json:"node"`
		Arg  json.RawMessage `json:"arg"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	s.Node, s.Arg = w.Node, w.Arg
	return nil
}

func (n *Node) inputType() reflect.Type {
	if n.inType != nil {
		return n.inType
	}
	return nil
}

func fmtAny(v any) string {
	switch x := v.(type) {
	case error:
		return x.Error()
	case string:
		return x
	}
	return strings.TrimSpace(fmt.Sprintf("%v", v))
}

func sortTasks(ts []*task) {
	slices.SortFunc(ts, func(a, b *task) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
}

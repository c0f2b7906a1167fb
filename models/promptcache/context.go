package promptcache

import (
	"context"
	"strings"

	"github.com/superstep-dev/superstep/engine"
)

type ctxKey int

const (
	threadKey ctxKey = iota
	skipWriteKey
	fanKey
	shareKey
)

// WithThread returns ctx naming the thread its model calls belong to.
// Inside a graph node the thread is the run's (engine.CurrentTask) and
// WithThread is not needed; outside one (a script, a test, a benchmark)
// calls without a thread share no latches and are not persisted.
func WithThread(ctx context.Context, thread string) context.Context {
	return context.WithValue(ctx, threadKey, thread)
}

// SkipCacheWrite returns ctx marking its model calls as a fire-and-forget
// fork (a summary, a title, memory extraction: §5 R3): the message marker
// goes on the second-to-last message, the last point the call shares with
// its parent, so the fork's private tail is never written to the cache,
// and the call changes none of the thread's latches.
func SkipCacheWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, skipWriteKey, true)
}

// LeadThenFan returns ctx opting its model calls into lead-then-fan
// (§6.2): of the calls that share group and start together, the first
// goes at once and the others wait until its reply's first byte, when its
// cache entry becomes readable, so they read it instead of each writing
// the same prefix. An empty group is the running node's step: every Send
// sibling of the same node started from the same checkpoint.
//
// A group lasts while its leader's call does: a call of the same group
// that starts after the leader ended leads a new group. Outside a node
// (a script, a test), where no checkpoint or step tells bursts apart,
// the calls of one thread (WithThread, or none) and group form a group
// per burst that way: the first of each burst leads.
func LeadThenFan(ctx context.Context, group string) context.Context {
	return context.WithValue(ctx, fanKey, fanOpt{group: group})
}

type fanOpt struct{ group string }

// callSite is where a model call runs: its thread and, inside a node, the
// task.
type callSite struct {
	thread     string
	task       engine.TaskContext
	inNode     bool
	skipWrite  bool
	fan        *fanOpt
	lineageKey string
	// shareParent: the call opted into its parent graph's prefix
	// (ShareParentPrefix).
	shareParent bool
}

func siteOf(ctx context.Context) callSite {
	var s callSite
	s.task, s.inNode = engine.CurrentTask(ctx)
	if s.inNode {
		s.thread = s.task.ThreadID
	}
	if t, ok := ctx.Value(threadKey).(string); ok {
		s.thread = t
	}
	s.skipWrite, _ = ctx.Value(skipWriteKey).(bool)
	if f, ok := ctx.Value(fanKey).(fanOpt); ok {
		s.fan = &f
	}
	s.shareParent, _ = ctx.Value(shareKey).(bool)
	s.lineageKey = graphPath(s.task.Namespace) + "|" + s.task.Node
	return s
}

// graphPath is a checkpoint namespace without its task ids
// ("outer:<id>|inner:<id>" → "outer|inner"): the same subgraph node is
// the same lineage from one run to the next.
func graphPath(ns string) string {
	if ns == "" {
		return ""
	}
	parts := strings.Split(ns, "|")
	for i, p := range parts {
		if j := strings.IndexByte(p, ':'); j >= 0 {
			parts[i] = p[:j]
		}
	}
	return strings.Join(parts, "|")
}

// isPush reports whether the task was started by a Send.
func (s callSite) isPush() bool {
	return len(s.task.Path) > 0 && s.task.Path[0] == "__pregel_push"
}

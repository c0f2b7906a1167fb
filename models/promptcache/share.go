package promptcache

import (
	"context"
	"reflect"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// ShareParentPrefix returns ctx opting the model calls of a node inside a
// subgraph into its parent's cached prefix (§5 R7, §6.2): the request is
// sent with the system prompt and tools of the latest successful call of
// the parent graph (the enclosing graph path, any node), as that call
// rendered them — never re-rendered, so a flag or section that moved in
// between cannot change the bytes — under the thread's latches, so it
// reads the parent's tools and system entries. The node's own system
// message and tools are replaced; its messages are its own. The record's
// lineage is "subgraph:shared" and break detection compares it with the
// parent's call (or its own previous call, when that is later).
//
// The parameters are kept in memory: after a restart the parent graph's
// next call provides them again.
//
// Without it, or before the parent graph made a call, a subgraph node is
// a lineage of its own and renders its own system and tools. Outside a
// subgraph (an empty checkpoint namespace) it has no effect, and so on
// OpenAI-compatible providers, whose implicit cache is keyed by the
// thread already.
func ShareParentPrefix(ctx context.Context) context.Context {
	return context.WithValue(ctx, shareKey, true)
}

// cacheSafe are a call's cache-safe parameters (R7): what a call that
// wants to read its entries must send identically. The layer keeps the
// latest per graph path and thread, after each successful call.
type cacheSafe struct {
	// system is the rendered system prompt, markers cleared except an
	// ephemeral one on the static boundary (read back by prepareAnthropic
	// as the boundary, as System's marker is).
	system []anthropic.TextBlockParam
	// tools are the tool definitions as pinned, markers cleared.
	tools []anthropic.ToolUnionParam
	// model, thinking and the message prefix are in the record's hashes.
	record *Record
}

// parentPath is the graph path enclosing a subgraph's, and whether there
// is one.
func parentPath(ns string) (string, bool) {
	p := graphPath(ns)
	if ns == "" {
		return "", false
	}
	if i := strings.LastIndexByte(p, '|'); i >= 0 {
		return p[:i], true
	}
	return "", true
}

// useParentPrefix replaces a subgraph call's system and tools by its
// parent graph's cache-safe parameters when the call opted in and the
// parent has made a call of the current generation.
func (c *Cache) useParentPrefix(cl *call, p *anthropic.MessageNewParams) {
	if !cl.site.shareParent {
		return
	}
	path, ok := parentPath(cl.site.task.Namespace)
	if !ok {
		return
	}
	ts := cl.ts
	ts.mu.Lock()
	safe := ts.safe[path]
	gen := ts.latches.Generation
	ts.mu.Unlock()
	if safe == nil || safe.record.Generation != gen {
		return
	}
	p.System = slices.Clone(safe.system)
	p.Tools = cloneTools(safe.tools)
	cl.shared = safe
}

// captureSafe keeps a call's rendered system and tools (after its markers
// were placed) for the subgraphs that opt in; afterCall commits them when
// the call succeeds. A call that skips its cache write leaves none.
func (c *Cache) captureSafe(cl *call, p *anthropic.MessageNewParams, boundary int) {
	if cl.site.skipWrite || cl.ts.id == "" {
		return
	}
	sys := slices.Clone(p.System)
	for i := range sys {
		sys[i].CacheControl = anthropic.CacheControlEphemeralParam{}
	}
	if boundary >= 0 && boundary < len(sys) {
		sys[boundary].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	tools := cloneTools(p.Tools)
	for i := range tools {
		if cc := tools[i].GetCacheControl(); cc != nil {
			*cc = anthropic.CacheControlEphemeralParam{}
		}
	}
	cl.safe = &cacheSafe{system: sys, tools: tools}
}

// commitSafe makes a successful call's parameters the latest of its graph
// path. ts.mu is held.
func (ts *threadState) commitSafe(cl *call, r *Record) {
	if cl.safe == nil {
		return
	}
	if ts.safe == nil {
		ts.safe = map[string]*cacheSafe{}
	}
	cl.safe.record = r
	ts.safe[graphPath(cl.site.task.Namespace)] = cl.safe
}

// shareBaseline makes a shared call's baseline the parent's call when it
// is later than the call's own previous one. Compared with the parent,
// the messages are the subgraph's own, so they are not a dimension.
func (cl *call) shareBaseline() {
	cl.lineage = "subgraph:shared"
	parent := cl.shared.record
	if cl.prev != nil && !cl.prev.StartedAt.Before(parent.StartedAt) {
		return
	}
	cl.prev, cl.sharedBaseline = parent, true
	cl.pending, cl.changedTool, cl.changedSys = diff(&parent.Hashes, &cl.hashes)
	cl.pending = slices.DeleteFunc(cl.pending, func(d Dimension) bool { return d == DimMessages })
}

// cloneTools copies tool definitions deeply enough that setting a copy's
// cache_control leaves the original alone: each union's variant pointer
// points to a copy of its value.
func cloneTools(in []anthropic.ToolUnionParam) []anthropic.ToolUnionParam {
	out := slices.Clone(in)
	for i := range out {
		v := reflect.ValueOf(&out[i]).Elem()
		for j := range v.NumField() {
			f := v.Field(j)
			if f.Kind() != reflect.Pointer || f.IsNil() || !f.CanSet() {
				continue
			}
			n := reflect.New(f.Type().Elem())
			n.Elem().Set(f.Elem())
			f.Set(n)
		}
	}
	return out
}

package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// NodeIOPreviewBytes caps each input and output preview in the node
// details panel: a node may read a large state, and the panel shows a
// few steps at once.
const NodeIOPreviewBytes = 1 << 10

// maxLineageSteps bounds how many checkpoints of a thread's current
// lineage, newest first, the details panel reads to find a node's runs
// (each is read with its values).
const maxLineageSteps = 64

// ErrUnknownNode is a node details request for a node the graph does
// not have (a 404 that says which).
var ErrUnknownNode = errors.New("unknown node")

// nodePath is the URL under which a node's details are served on a page
// at base ("/graphs/g" or "/threads/t"); q is the node's qualified name.
func nodePath(base, q string) string { return base + "/nodes/" + url.PathEscape(q) }

// GraphNodeDetails answers GET /graphs/{graph}/nodes/{node}: what the
// compiled graph declares about the node (triggers, reads, writes, retry
// and cache policies). {node} is a qualified name ("research:plan" for a
// node inside subgraph node "research"); an unknown one is a 404 saying
// which. With ?fragment=1 the answer is the panel's content alone, as the
// graph script asks for it; otherwise a page of its own.
func GraphNodeDetails(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "graph")
		g, err := rt.Runs.Graph(name)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v, err := nodeDetails(g.Topology(), nodeParam(r))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v.Graph, v.Back = name, "/graphs/"+url.PathEscape(name)
		renderNodeDetails(w, r, rt, v)
	})
}

// ThreadNodeDetails answers GET /threads/{thread}/nodes/{node}: the
// node's declarations as GraphNodeDetails, and each of its runs in the
// thread's current lineage (the head checkpoint and its ancestors, not
// abandoned branches): the step, the state keys it read (or its Send's
// argument) and its writes, each cut to NodeIOPreviewBytes. A node inside
// a subgraph lists its runs in the subgraph runs of that lineage, with
// the subgraph's own step numbers.
func ThreadNodeDetails(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, err := rt.Runs.Thread(r.Context(), chi.URLParam(r, "thread"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		g, err := rt.Runs.Graph(t.Graph)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		p := g.Pregel()
		v, err := nodeDetails(g.Topology(), nodeParam(r))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v.Graph, v.Thread, v.Back = t.Graph, t.ID, "/threads/"+url.PathEscape(t.ID)
		if err := nodeRuns(r.Context(), p, t.ID, &v); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		renderNodeDetails(w, r, rt, v)
	})
}

// nodeParam is the {node} of a details URL. Scripts escape the ":" of a
// qualified name (encodeURIComponent), and the router then hands over the
// escaped form.
func nodeParam(r *http.Request) string {
	raw := chi.URLParam(r, "node")
	if q, err := url.PathUnescape(raw); err == nil {
		return q
	}
	return raw
}

func renderNodeDetails(w http.ResponseWriter, r *http.Request, rt Routes, v web.NodeDetailsView) {
	if r.URL.Query().Get("fragment") != "" {
		render(w, r, rt.Logger, http.StatusOK, web.NodeDetails(v))
		return
	}
	render(w, r, rt.Logger, http.StatusOK, web.NodeDetailsPage(v))
}

// findNode finds the node named by qualified name q in topo, descending
// into subgraphs ("research:plan").
func findNode(topo engine.Topology, q string) (engine.TopoNode, error) {
	segs := strings.Split(q, ":")
	for i, seg := range segs {
		j := slices.IndexFunc(topo.Nodes, func(n engine.TopoNode) bool { return n.Name == seg })
		if j < 0 || seg == engine.Start || seg == engine.End {
			return engine.TopoNode{}, fmt.Errorf("%w: node %q: the graph has no node %q there", ErrUnknownNode, q, seg)
		}
		n := topo.Nodes[j]
		if i == len(segs)-1 {
			return n, nil
		}
		if n.Subgraph == nil {
			return engine.TopoNode{}, fmt.Errorf("%w: node %q: %q is not a subgraph", ErrUnknownNode, q, seg)
		}
		topo = *n.Subgraph
	}
	return engine.TopoNode{}, fmt.Errorf("%w: node %q", ErrUnknownNode, q)
}

// nodeDetails is the panel's view of node q's declarations.
func nodeDetails(topo engine.Topology, q string) (web.NodeDetailsView, error) {
	n, err := findNode(topo, q)
	if err != nil {
		return web.NodeDetailsView{}, err
	}
	v := web.NodeDetailsView{Node: q, Subgraph: n.Subgraph != nil, Deferred: n.Deferred,
		Triggers: n.Triggers, Reads: n.Reads, Writes: n.Writes, SendOnly: len(n.Reads) == 0 && len(n.Triggers) > 0}
	v.SentBy = sendersOf(topo, q)
	for _, p := range n.Retry {
		v.Retry = append(v.Retry, retryText(p))
	}
	if n.Cache != nil {
		v.Cache = cacheText(*n.Cache)
	}
	return v, nil
}

// sendersOf lists the nodes that declared Sends to node q (its last
// segment, in the graph that holds it).
func sendersOf(topo engine.Topology, q string) []string {
	prefix, name := "", q
	if i := strings.LastIndex(q, ":"); i >= 0 {
		prefix, name = q[:i], q[i+1:]
		if p, err := findNode(topo, prefix); err == nil && p.Subgraph != nil {
			topo = *p.Subgraph
		}
	}
	var out []string
	for _, e := range topo.Edges {
		if from := qualify(prefix, e.From); e.Send && e.To == name && !slices.Contains(out, from) {
			out = append(out, from)
		}
	}
	return out
}

// retryText says what a retry policy does, with the engine's defaults
// for its zero fields filled in.
func retryText(p engine.RetryPolicy) string {
	attempts, factor, maxWait := p.MaxAttempts, p.BackoffFactor, p.MaxInterval
	if attempts <= 0 {
		attempts = 3
	}
	if factor == 0 {
		factor = 2
	}
	if maxWait == 0 {
		maxWait = 128 * time.Second
	}
	s := fmt.Sprintf("up to %d attempts; first wait %s, ×%g after each, at most %s", attempts, p.InitialInterval, factor, maxWait)
	if p.Jitter {
		s += ", with jitter"
	}
	if p.RetryOn != nil {
		return s + "; retries the errors its own RetryOn accepts"
	}
	return s + "; retries transient errors (engine.DefaultRetryOn)"
}

// cacheText says what a cache policy does.
func cacheText(p engine.CachePolicy) string {
	s := "cached until cleared"
	if p.TTL > 0 {
		s = "cached for " + p.TTL.String()
	}
	if p.Key != nil {
		return s + "; keyed by its own key function"
	}
	return s + "; keyed by its input (canonical JSON)"
}

// nodeRuns fills v.Runs with the node's tasks in the thread's current
// lineage: the newest checkpoint and its ancestors, at most
// maxLineageSteps of them. A task planned at a checkpoint ran in the step
// after it: its input is that checkpoint's values of the keys it reads
// (or its Send's argument), its output the writes it saved. A node inside
// a subgraph ("research:plan") is found in the subgraph runs of the
// lineage's "research" tasks, each in its own lineage; its steps are the
// subgraph's own.
func nodeRuns(ctx context.Context, p *engine.Pregel, thread string, v *web.NodeDetailsView) error {
	if p.Checkpointer() == nil {
		v.RunsNote = "The graph has no checkpointer, so its runs are not kept."
		return nil
	}
	c := runCollector{p: p, thread: thread, v: v, budget: maxLineageSteps}
	if err := c.collect(ctx, "", "", strings.Split(v.Node, ":")); err != nil {
		return err
	}
	if c.cut {
		v.RunsNote = fmt.Sprintf("Only the last %d checkpoints of this branch are searched.", maxLineageSteps)
	}
	return nil
}

// runCollector walks a thread's lineage, and the lineages of the subgraph
// runs in it, for one node's tasks; budget bounds the checkpoints read.
type runCollector struct {
	p      *engine.Pregel
	thread string
	v      *web.NodeDetailsView
	budget int
	cut    bool
}

// collect reads the lineage in checkpoint namespace ns (the subgraph run
// whose qualified node name is where; "" for the thread's graph) for
// tasks of path[0]: at the end of path they are the node's runs,
// otherwise subgraph tasks to descend into.
func (c *runCollector) collect(ctx context.Context, ns, where string, path []string) error {
	ids, cut, err := lineage(ctx, c.p.Checkpointer(), checkpoints.ListQuery{ThreadID: c.thread, Namespace: ns}, c.budget)
	if err != nil {
		return err
	}
	c.budget -= len(ids)
	c.cut = c.cut || cut
	last := len(path) == 1
	snaps := make([]*engine.StateSnapshot, len(ids))
	for i, id := range ids {
		if snaps[i], err = c.p.GetStateWith(ctx, checkpoints.Config{ThreadID: c.thread, Namespace: ns, CheckpointID: id}, engine.StateOptions{}); err != nil {
			return err
		}
	}
	for i, snap := range snaps {
		// A checkpoint the lineage left by an edit or a fork: the tasks
		// that finished there belong to the abandoned branch (the
		// timeline leaves them out the same way, runs.Catchup).
		superseded := i+1 < len(snaps) && snaps[i+1].Metadata.Source != checkpoints.SourceLoop
		for _, ts := range snap.Tasks {
			if ts.Name != path[0] {
				continue
			}
			if superseded && ts.Error == "" && len(ts.Interrupts) == 0 {
				continue
			}
			if !last {
				if ts.Subgraph != nil && c.budget > 0 {
					if err := c.collect(ctx, ts.Subgraph.Namespace, qualify(where, path[0]), path[1:]); err != nil {
						return err
					}
				}
				continue
			}
			c.v.Runs = append(c.v.Runs, c.run(snap, ts, i == len(ids)-1, ns == ""))
		}
	}
	return nil
}

// run is the view of task ts, planned at checkpoint snap. head says snap
// is the newest checkpoint of its lineage, where a task without writes
// has not run yet; root says snap is the thread graph's (the checkpoint
// pages show those).
func (c *runCollector) run(snap *engine.StateSnapshot, ts engine.TaskState, head, root bool) web.NodeRunView {
	id := snap.Config.CheckpointID
	run := web.NodeRunView{Step: snap.Metadata.Step + 1, TaskID: ts.ID, Checkpoint: id, Error: ts.Error}
	if root {
		run.CheckpointURL = ckptPath(url.PathEscape(c.thread), url.PathEscape(id))
	}
	var in any
	if ts.Arg != nil {
		run.Send, in = true, ts.Arg
	} else {
		read := map[string]any{}
		for _, k := range c.v.Reads {
			if val, ok := snap.Values[k]; ok {
				read[k] = val
			}
		}
		in = read
	}
	run.Input, run.InputTruncated, run.InputSize = runs.PreviewSize(in, NodeIOPreviewBytes)
	switch {
	case ts.Error != "":
		run.Status = "failed"
	case len(ts.Interrupts) > 0:
		run.Status = "interrupted"
	case ts.Result != nil || !head:
		run.Status = "done"
	default:
		run.Status = "pending"
	}
	if run.Status != "pending" {
		out := any(ts.Result)
		if ts.Result == nil {
			out = map[string]any{}
		}
		run.Output, run.OutputTruncated, run.OutputSize = runs.PreviewSize(out, NodeIOPreviewBytes)
	}
	return run
}

// lineage lists the current lineage of a thread's namespace (q), oldest
// first: its newest checkpoint and that checkpoint's ancestors (forks left
// behind are not in it), at most max of them (cut says some older ones
// were left out). The newest max headers are read in one listing; a
// parent older than those (a long abandoned branch pushed it out) is read
// on its own.
func lineage(ctx context.Context, saver checkpoints.Saver, q checkpoints.ListQuery, max int) (ids []string, cut bool, err error) {
	if max <= 0 {
		return nil, true, nil
	}
	tups, err := saver.List(ctx, q, checkpoints.ListOptions{Headers: true, Limit: max})
	if err != nil {
		return nil, false, err
	}
	if len(tups) == 0 {
		return nil, false, nil
	}
	parent := make(map[string]*checkpoints.Config, len(tups))
	for _, t := range tups {
		parent[t.Config.CheckpointID] = t.ParentConfig
	}
	for at := &tups[0].Config; at != nil && at.CheckpointID != ""; {
		if len(ids) == max {
			cut = true
			break
		}
		ids = append(ids, at.CheckpointID)
		p, ok := parent[at.CheckpointID]
		if !ok {
			t, err := saver.Get(ctx, *at)
			if err != nil {
				return nil, false, err
			}
			if t == nil {
				break
			}
			p = t.ParentConfig
		}
		at = p
	}
	slices.Reverse(ids)
	return ids, cut, nil
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
)

// AddSubgraph adds a compiled graph as a node. The subgraph receives the
// parent state's values for the keys it shares with the parent, runs in
// its own checkpoint namespace ("<node>:<task id>", nested with "|") of the
// same thread, and its final values for shared keys become the node's
// update. An interrupt inside the subgraph stops the parent too, and a
// resume of the parent reaches it.
func (g *StateGraph[S]) AddSubgraph(name string, sub Compiled, opts ...NodeOption) *StateGraph[S] {
	if sub == nil || sub.Pregel() == nil {
		g.errs = append(g.errs, fmt.Errorf("%w: subgraph %q is nil", ErrInvalidGraph, name))
		return g
	}
	sp := sub.Pregel()
	shared, known := map[string]bool{}, map[string]bool{}
	for _, k := range sp.cfg.OutputChannels {
		known[k] = true
		if _, ok := g.byName[k]; ok {
			shared[k] = true
		}
	}
	if len(shared) == 0 {
		g.errs = append(g.errs, fmt.Errorf("%w: subgraph %q shares no state key with the parent", ErrInvalidGraph, name))
		return g
	}
	g.addNode(name, anyMapType, func(ctx context.Context, in any) (Output, error) {
		t := taskFrom(ctx)
		if t == nil {
			return nil, errors.New("engine: subgraph called outside a task")
		}
		// From the parent's state only shared keys arrive; a Send may
		// carry any key of the subgraph's own state.
		values, _ := in.(map[string]any)
		input := Update{}
		for k, v := range values {
			if known[k] {
				input[k] = v
			}
		}
		out, err := t.runSubgraph(ctx, sp, input)
		if err != nil {
			return nil, err
		}
		upd := Update{}
		if m, ok := out.(map[string]any); ok {
			for k, v := range m {
				if shared[k] {
					upd[k] = v
				}
			}
		} else if out != nil {
			for k, v := range structValues(out) {
				if shared[k] {
					upd[k] = v
				}
			}
		}
		return upd, nil
	}, nil, opts)
	if n := g.nodes[name]; n != nil {
		n.subgraph, n.subCompiled = sp, sub
		n.plan = &inputPlan{typ: anyMapType, asMap: true}
		for _, f := range g.fields {
			if shared[f.name] {
				n.plan.fields = append(n.plan.fields, planField{channel: f.name})
			}
		}
	}
	return g
}

// runSubgraph runs sub inside the task, in the task's namespace.
func (t *task) runSubgraph(ctx context.Context, sub *Pregel, input Update) (any, error) {
	l := t.l
	ns := t.checkpointNS()
	saver := sub.cfg.Checkpointer
	if saver == nil {
		saver = l.saver
	}
	child := &loop{g: sub, saver: saver, ns: ns, rs: l.rs, resumeMap: l.resumeMap}
	child.opts = RunOptions{
		ThreadID: l.opts.ThreadID, RecursionLimit: l.opts.RecursionLimit, Durability: l.opts.Durability,
		Metadata: l.opts.Metadata, RunID: l.opts.RunID,
		InterruptBefore: innerBreakpoints(l.opts.InterruptBefore, t.name, sub.cfg.InterruptBefore),
		InterruptAfter:  innerBreakpoints(l.opts.InterruptAfter, t.name, sub.cfg.InterruptAfter),
	}
	child.parents = map[string]string{}
	for k, v := range l.parents {
		child.parents[k] = v
	}
	if l.ckptID != "" {
		child.parents[l.ns] = l.ckptID
	}
	child.emit = l.emit
	child.needIDs = saver != nil || l.emit != nil
	if saver != nil && child.opts.Durability == DurabilityAsync {
		child.persist = newPersister(child, nil)
	}
	child.saverForms()
	var in any = input
	if saver != nil {
		tup, err := saver.Get(ctx, checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: ns})
		if err != nil {
			return nil, err
		}
		if tup != nil {
			in = nil // resume (or reuse) the subgraph's own state
		}
	}
	err := child.run(ctx, in)
	if perr := child.finishPersist(ctx, err); perr != nil && (err == nil || errors.Is(err, ErrInterrupted)) {
		err = perr
	}
	var intr *Interrupted
	if errors.As(err, &intr) {
		t.imu.Lock()
		t.interrupts = append(t.interrupts, intr.Interrupts...)
		t.subInterrupted = true
		for _, n := range intr.Before {
			t.subBefore = append(t.subBefore, t.name+":"+n)
		}
		for _, n := range intr.After {
			t.subAfter = append(t.subAfter, t.name+":"+n)
		}
		t.imu.Unlock()
		return nil, errInterruptSignal
	}
	if err != nil {
		return nil, fmt.Errorf("subgraph %q: %w", t.name, err)
	}
	return child.output()
}

// innerBreakpoints are the breakpoints a subgraph run by node gets from
// its parent run's list names: those qualified with the node's name
// ("research:plan" → "plan"; deeper ones keep the rest of their path for
// the subgraph's own subgraphs), added to the subgraph's compiled ones.
// nil, when names holds none, leaves the compiled ones in force. Upstream
// applies interrupt_before per graph and has no way to reach a node inside
// a subgraph from the parent's call; a qualified name is ours (engine/doc.go).
func innerBreakpoints(names []string, node string, compiled []string) []string {
	var inner []string
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, node+":"); ok && rest != "" {
			inner = append(inner, rest)
		}
	}
	if inner == nil {
		return nil
	}
	return append(slices.Clone(compiled), inner...)
}

// subgraphFor finds the subgraph that owns a checkpoint namespace
// ("<node>:<task id>|...") below g.
func (g *Pregel) subgraphFor(ns string) (*Pregel, error) {
	first, _, _ := strings.Cut(ns, "|")
	name, _, ok := strings.Cut(first, ":")
	if !ok {
		return nil, fmt.Errorf("%w: malformed checkpoint namespace %q", checkpoints.ErrInvalidConfig, ns)
	}
	n, ok := g.nodes[name]
	if !ok || n.subgraph == nil {
		return nil, fmt.Errorf("%w: namespace %q names no subgraph node of this graph", checkpoints.ErrInvalidConfig, ns)
	}
	return n.subgraph, nil
}

// resolve returns the graph that owns namespace ns (g itself for "").
func (g *Pregel) resolve(ns string) (*Pregel, error) {
	cur := g
	for ns != "" {
		seg, rest, _ := strings.Cut(ns, "|")
		sub, err := cur.subgraphFor(seg)
		if err != nil {
			return nil, err
		}
		cur, ns = sub, rest
	}
	return cur, nil
}

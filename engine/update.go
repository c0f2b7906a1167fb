package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
)

// Special as-node values for UpdateState.
const (
	// AsInput applies values as new run input (source "input").
	AsInput = inputTask
	// AsCopy forks the checkpoint unchanged: a sibling of it (same
	// parent), source "fork", which makes interrupts fire again.
	AsCopy = "__copy__"
)

// StateUpdate is one update of a BulkUpdateState superstep.
type StateUpdate struct {
	// Values is what the node is taken to have returned: an Update,
	// Updates, a Command (update and goto), a map[string]any, or nil.
	Values any
	// AsNode is the node the update is applied as; empty infers it.
	AsNode string
}

// UpdateState applies values to the checkpoint cfg addresses (the latest
// when cfg.CheckpointID is empty) as if node asNode had returned them: the
// node's writers run — its edges and routers fire again — but never the
// node itself. The result is a new checkpoint (source "update") whose
// parent is the updated one, so updating an older checkpoint starts a
// branch; pending writes of the old checkpoint are never applied to it.
//
// asNode may be empty when it can be inferred: the only node, Start on a
// fresh thread, or else the node that ran last (an error names the
// candidates when that is ambiguous). The special values are AsInput,
// AsCopy, Start, and End (with nil values: finish the pending tasks' step
// without running them, clearing next).
func (g *Pregel) UpdateState(ctx context.Context, cfg checkpoints.Config, values any, asNode string) (checkpoints.Config, error) {
	return g.BulkUpdateState(ctx, cfg, [][]StateUpdate{{{Values: values, AsNode: asNode}}})
}

// UpdateOptions tune UpdateStateWith.
type UpdateOptions struct {
	// Listener receives the events of each update superstep: the barrier
	// (BarrierApplied) and the new checkpoint (CheckpointSaved, with its
	// next tasks and source "update", "input" or "fork"), so a viewer can
	// draw the new branch.
	Listener func(Event)
}

// UpdateStateWith is BulkUpdateState with options.
func (g *Pregel) UpdateStateWith(ctx context.Context, cfg checkpoints.Config, supersteps [][]StateUpdate, opts UpdateOptions) (checkpoints.Config, error) {
	return g.bulkUpdate(ctx, cfg, supersteps, opts)
}

// BulkUpdateState applies several supersteps of updates in order, each
// creating one checkpoint, and returns the config of the last.
func (g *Pregel) BulkUpdateState(ctx context.Context, cfg checkpoints.Config, supersteps [][]StateUpdate) (checkpoints.Config, error) {
	return g.bulkUpdate(ctx, cfg, supersteps, UpdateOptions{})
}

func (g *Pregel) bulkUpdate(ctx context.Context, cfg checkpoints.Config, supersteps [][]StateUpdate, opts UpdateOptions) (checkpoints.Config, error) {
	if g.cfg.Checkpointer == nil {
		return cfg, fmt.Errorf("%w: UpdateState needs a graph compiled with a checkpointer", checkpoints.ErrInvalidConfig)
	}
	if cfg.ThreadID == "" {
		return cfg, fmt.Errorf("%w: UpdateState needs a thread id", checkpoints.ErrInvalidConfig)
	}
	if len(supersteps) == 0 {
		return cfg, fmt.Errorf("%w: no supersteps to apply", ErrInvalidUpdate)
	}
	for i, updates := range supersteps {
		if len(updates) == 0 {
			return cfg, fmt.Errorf("%w: superstep %d has no updates", ErrInvalidUpdate, i)
		}
		next, err := g.updateSuperstep(ctx, cfg, updates, opts)
		if err != nil {
			return cfg, err
		}
		cfg = next
	}
	return cfg, nil
}

func (g *Pregel) updateSuperstep(ctx context.Context, cfg checkpoints.Config, updates []StateUpdate, opts UpdateOptions) (cfgOut checkpoints.Config, err error) {
	saver := g.cfg.Checkpointer
	tup, err := saver.Get(ctx, cfg)
	if err != nil {
		return cfg, err
	}
	if tup == nil && cfg.CheckpointID != "" {
		return cfg, fmt.Errorf("%w: thread %q has no checkpoint %q", checkpoints.ErrInvalidConfig, cfg.ThreadID, cfg.CheckpointID)
	}
	l := &loop{g: g, saver: saver, needIDs: true, rs: &resumeState{}, opts: RunOptions{ThreadID: cfg.ThreadID, Durability: DurabilitySync}}
	l.ns = cfg.Namespace
	// Frames, but not StepSaver: an update's writes are saved on their
	// own, against checkpoints it reads or writes as it goes.
	l.frameSaver, _ = saver.(checkpoints.FrameSaver)
	if opts.Listener != nil {
		l.emit = &emitter{fn: opts.Listener}
		defer func() {
			if err == nil && l.lastSaved != nil {
				// The new checkpoint, with the tasks that would run next.
				tasks, perr := l.prepare()
				if perr == nil {
					l.emitCheckpoint(tasks)
				}
			}
		}()
	}
	if err := l.restore(tup); err != nil {
		return cfg, err
	}
	if tup != nil {
		l.step = tup.Metadata.Step + 1
	}
	l.ckptCfg.ThreadID, l.ckptCfg.Namespace = cfg.ThreadID, cfg.Namespace

	if len(updates) == 1 {
		u := updates[0]
		switch u.AsNode {
		case AsCopy:
			if tup == nil {
				return cfg, fmt.Errorf("%w: nothing to copy on thread %q", checkpoints.ErrInvalidConfig, cfg.ThreadID)
			}
			if u.Values != nil {
				return cfg, fmt.Errorf("%w: as-node %s copies the checkpoint unchanged; apply values in a following superstep", ErrInvalidUpdate, AsCopy)
			}
			// A sibling of the copied checkpoint: same parent.
			l.ckptCfg = checkpoints.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace}
			if tup.ParentConfig != nil {
				l.ckptCfg = *tup.ParentConfig
			}
			from, err := l.subgraphNamespaces()
			if err != nil {
				return cfg, err
			}
			if err := l.putCheckpoint(ctx, checkpoints.SourceFork); err != nil {
				return cfg, err
			}
			if err := l.carrySubgraphs(ctx, from); err != nil {
				return cfg, err
			}
			return l.ckptCfg, nil
		case AsInput:
			writes, err := l.mapInput(u.Values)
			if err != nil {
				return cfg, err
			}
			if _, err := l.apply([]*task{inputTaskOf(l, writes)}); err != nil {
				return cfg, err
			}
			if err := l.putCheckpoint(ctx, checkpoints.SourceInput); err != nil {
				return cfg, err
			}
			return l.ckptCfg, nil
		case End:
			if u.Values != nil {
				return cfg, fmt.Errorf("%w: as-node %s takes no values", ErrInvalidUpdate, End)
			}
			tasks, err := l.prepare()
			if err != nil {
				return cfg, err
			}
			tasks = slices.Clone(tasks)
			l.reapplyPending(tasks)
			if _, err := l.apply(tasks); err != nil {
				return cfg, err
			}
			if err := l.putCheckpoint(ctx, checkpoints.SourceUpdate); err != nil {
				return cfg, err
			}
			return l.ckptCfg, nil
		}
	}

	planned, err := l.prepare()
	if err != nil {
		return cfg, err
	}
	planned = slices.Clone(planned)
	from := l.subgraphTasks(planned)
	var tasks []*task
	for _, u := range updates {
		name, err := l.inferAsNode(u.AsNode, tup == nil)
		if err != nil {
			return cfg, err
		}
		n := g.nodes[name]
		t := &task{}
		t.l, t.name, t.node, t.triggers, t.asUpdate, t.idx = l, name, n, []string{interruptKey}, true, -1
		// Reuse the id of the task that would have run, so the update
		// shows as that task's result in history.
		for _, p := range planned {
			if p.name == name {
				t.id = p.ID()
			}
		}
		if t.id == "" {
			t.id = formatUUID(hashID(l.ckptBytes, interruptKey+name))
		}
		out, err := asOutput(u.Values)
		if err != nil {
			return cfg, err
		}
		for _, w := range n.Writers {
			if err := w.write(t, out); err != nil {
				return cfg, fmt.Errorf("update as %q: %w", name, err)
			}
		}
		tasks = append(tasks, t)
	}
	if tup != nil {
		for _, t := range tasks {
			enc, err := encodeWrites(t.writes)
			if err != nil {
				return cfg, err
			}
			if len(enc) > 0 {
				if err := saver.PutWrites(ctx, tup.Config, enc, t.ID(), ""); err != nil {
					return cfg, err
				}
			}
		}
	}
	// A subgraph whose input the edit changed starts over on the new
	// input (as upstream); one whose input it left alone keeps its state.
	for key := range from {
		for _, t := range tasks {
			if slices.ContainsFunc(t.writes, func(w KV) bool { return slices.Contains(g.nodes[key.name].inputKeys, w.Key) }) {
				delete(from, key)
				break
			}
		}
	}
	if _, err := l.apply(tasks); err != nil {
		return cfg, err
	}
	// Like upstream, an update checkpoint records no updated channels:
	// tasks pending before the update (triggered by channels it did not
	// touch) must stay candidates.
	l.updatedKnown, l.updated = false, nil
	l.opts.Metadata = map[string]any{MetadataEdited: updateWrites(tasks, g.streamChannels())}
	if err := l.putCheckpoint(ctx, checkpoints.SourceUpdate); err != nil {
		return cfg, err
	}
	if err := l.carrySubgraphs(ctx, from); err != nil {
		return cfg, err
	}
	return l.ckptCfg, nil
}

// MetadataEdited is the metadata key of an update checkpoint that says
// which node each edit was applied as and which state keys it wrote:
// {"node": ["key", …]}, so a viewer can say "edit of answer, n as fetch"
// from the metadata alone. Upstream removed its old "writes" key (which
// held the values); we do not bring that key back under another shape,
// and keep only the keys (the values are in the checkpoint).
const MetadataEdited = "edited"

// updateWrites lists, per as-node, the state keys its update wrote,
// sorted; bookkeeping channels (branches, joins) are left out.
func updateWrites(tasks []*task, state []string) map[string]any {
	out := make(map[string]any, len(tasks))
	for _, t := range tasks {
		keys := []string{}
		for _, w := range t.writes {
			if slices.Contains(state, w.Key) && !slices.Contains(keys, w.Key) {
				keys = append(keys, w.Key)
			}
		}
		slices.Sort(keys)
		if prev, ok := out[t.name].([]string); ok {
			keys = slices.Compact(slices.Sorted(slices.Values(append(prev, keys...))))
		}
		out[t.name] = keys
	}
	return out
}

// hashID is the 16 bytes of the task id taskIDHasher makes of ckpt
// followed by s.
func hashID(ckpt [16]byte, s string) [16]byte { return idSum(append(ckpt[:], s...)) }

func asOutput(v any) (any, error) {
	switch x := v.(type) {
	case nil, Update, Updates, KV, Command, *Command:
		return x, nil
	case map[string]any:
		return Update(x), nil
	}
	return nil, fmt.Errorf("%w: update values must be an Update, Updates, a KV (Set), a Command or a map, got %T", ErrInvalidUpdate, v)
}

// inferAsNode resolves the node an update is applied as.
func (l *loop) inferAsNode(asNode string, fresh bool) (string, error) {
	g := l.g
	if asNode != "" {
		if _, ok := g.nodes[asNode]; !ok {
			return "", fmt.Errorf("%w: unknown as-node %q; valid nodes: %s", ErrInvalidUpdate, asNode, strings.Join(l.visibleNodes(), ", "))
		}
		return asNode, nil
	}
	visible := l.visibleNodes()
	switch {
	case len(visible) == 1:
		return visible[0], nil
	case fresh:
		if _, ok := g.nodes[Start]; ok {
			return Start, nil
		}
	}
	// The node that ran last: the highest version it has seen.
	var best []string
	var bestV int64
	for i, s := range l.seen {
		n := g.nodeList[i]
		if s == nil || n.hidden {
			continue
		}
		v := slices.Max(append([]int64{0}, s...))
		switch {
		case v > bestV:
			bestV, best = v, []string{n.Name}
		case v == bestV && v > 0:
			best = append(best, n.Name)
		}
	}
	switch len(best) {
	case 1:
		return best[0], nil
	case 0:
		return "", fmt.Errorf("%w: cannot infer which node the update is from; pass one of: %s", ErrInvalidUpdate, strings.Join(visible, ", "))
	}
	return "", fmt.Errorf("%w: ambiguous update: %s ran last together; pass the node explicitly", ErrInvalidUpdate, strings.Join(best, ", "))
}

func (l *loop) visibleNodes() []string {
	var out []string
	for _, n := range l.g.nodeList {
		if !n.hidden {
			out = append(out, n.Name)
		}
	}
	return out
}

// UpdateState updates the thread's state as a node; see Pregel.UpdateState.
func (g *Graph[S]) UpdateState(ctx context.Context, cfg checkpoints.Config, values any, asNode string) (checkpoints.Config, error) {
	return g.pregel.UpdateState(ctx, cfg, values, asNode)
}

// UpdateStateWith applies supersteps of updates with options; see
// Pregel.UpdateStateWith.
func (g *Graph[S]) UpdateStateWith(ctx context.Context, cfg checkpoints.Config, supersteps [][]StateUpdate, opts UpdateOptions) (checkpoints.Config, error) {
	return g.pregel.UpdateStateWith(ctx, cfg, supersteps, opts)
}

// BulkUpdateState applies supersteps of updates; see Pregel.BulkUpdateState.
func (g *Graph[S]) BulkUpdateState(ctx context.Context, cfg checkpoints.Config, supersteps [][]StateUpdate) (checkpoints.Config, error) {
	return g.pregel.BulkUpdateState(ctx, cfg, supersteps)
}

package engine

import (
	"context"
	"fmt"
	"maps"

	"github.com/superstep-dev/superstep/checkpoints"
)

// A subgraph runs in the namespace "<node>:<task id>", and a task id is a
// hash of the checkpoint the task runs from. A fork — a time-travel run's
// fork checkpoint, a copy (AsCopy), an UpdateState checkpoint — has a new
// id, so its subgraph tasks get new namespaces. Upstream leaves those
// empty: the subgraph starts over, its earlier nodes run again and a
// resume answer goes to a new interrupt (langchain-ai/langgraph#8458). We
// carry the state over when the fork is made: each subgraph task the fork
// would run gets, in its new namespace, a fork of the latest checkpoint the
// same task had in the source's namespace — if that subgraph had not
// finished (one that ran to its end runs again, as every task after the
// checkpoint travelled to does), and, for an edit, if the edit did not
// write a key the subgraph reads (then it starts over on the new input).
// Because every fork carries from its own source, the state follows a
// lineage through any number of forks, and what is carried is the
// subgraph as it was when the fork was made (progress made later on the
// source branch stays there).

// taskKey names a task independently of the checkpoint it runs from: the
// node for a task its triggers start, the Send's index for a pushed one.
type taskKey struct {
	name string
	push bool
	idx  int
}

// subgraphNamespaces returns the namespaces of the subgraph tasks the
// loop would run next from its current checkpoint, by task key. The map
// is never nil.
func (l *loop) subgraphNamespaces() (map[taskKey]string, error) {
	tasks, err := l.prepare()
	if err != nil {
		return nil, err
	}
	return l.subgraphTasks(tasks), nil
}

// subgraphTasks returns the namespaces of the subgraph tasks among tasks,
// by task key.
func (l *loop) subgraphTasks(tasks []*task) map[taskKey]string {
	out := map[taskKey]string{}
	for _, t := range tasks {
		if t.node != nil && t.node.subgraph != nil {
			out[taskKey{t.name, t.push, t.idx}] = t.checkpointNS()
		}
	}
	return out
}

// carrySubgraphs gives each subgraph task of the loop's new checkpoint
// the state its counterpart had in from (subgraphNamespaces of the source
// checkpoint), nested subgraphs included.
func (l *loop) carrySubgraphs(ctx context.Context, from map[taskKey]string) error {
	if len(from) == 0 || l.saver == nil {
		return nil
	}
	if l.persist != nil {
		// The copies name the new checkpoint as their parent: it is saved
		// first (and the subgraph tasks that read them run after this).
		if err := l.persist.flush(); err != nil {
			return err
		}
	}
	to, err := l.subgraphNamespaces()
	if err != nil {
		return err
	}
	parents := make(map[string]string, len(l.parents)+1)
	maps.Copy(parents, l.parents)
	parents[l.ns] = l.ckptID
	for key, ns := range to {
		old, ok := from[key]
		if !ok {
			continue
		}
		if err := carryNamespace(ctx, l.saver, l.g.nodes[key.name].subgraph, l.opts.ThreadID, old, ns, parents); err != nil {
			return err
		}
	}
	return nil
}

// carryNamespace copies the latest checkpoint of sub's namespace oldNS
// into newNS as a fork (its values and versions, not its pending writes:
// answers given on the old branch are not reused, so interrupts fire
// again, as in any replay), then does the same for sub's own subgraph
// tasks.
func carryNamespace(ctx context.Context, saver checkpoints.Saver, sub *Pregel, thread, oldNS, newNS string, parents map[string]string) error {
	if existing, err := saver.Get(ctx, checkpoints.Config{ThreadID: thread, Namespace: newNS}); err != nil || existing != nil {
		return err
	}
	src, err := saver.Get(ctx, checkpoints.Config{ThreadID: thread, Namespace: oldNS})
	if err != nil || src == nil {
		return err
	}
	// Only a subgraph that had not finished is carried: one that ran to
	// its end is run again from its input, as any task after the
	// checkpoint travelled to is.
	oldL := &loop{g: sub, ns: oldNS, needIDs: true, rs: &resumeState{}, opts: RunOptions{ThreadID: thread}}
	if err := oldL.restore(src); err != nil {
		return err
	}
	pending, err := oldL.prepare()
	if err != nil || len(pending) == 0 {
		return err
	}
	from := oldL.subgraphTasks(pending)
	cp := *src.Checkpoint
	cp.ID = newCheckpointID()
	md := src.Metadata
	md.Source = checkpoints.SourceFork
	md.Parents = maps.Clone(parents)
	cfg, err := saver.Put(ctx, checkpoints.Config{ThreadID: thread, Namespace: newNS}, &cp, md, maps.Clone(cp.ChannelVersions))
	if err != nil {
		return fmt.Errorf("carry subgraph state from %s into %s: %w", oldNS, newNS, err)
	}
	// The subgraph's own subgraph tasks: those of the copied checkpoint
	// against those of the copy.
	if len(from) == 0 {
		return nil
	}
	copied := &checkpoints.Tuple{Config: cfg, Checkpoint: &cp, Metadata: md}
	newL := &loop{g: sub, ns: newNS, saver: saver, needIDs: true, rs: &resumeState{}, opts: RunOptions{ThreadID: thread}, parents: md.Parents}
	if err := newL.restore(copied); err != nil {
		return err
	}
	return newL.carrySubgraphs(ctx, from)
}

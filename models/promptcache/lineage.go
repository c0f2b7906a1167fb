package promptcache

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// maxAncestors bounds the walk up a checkpoint's ancestors.
const maxAncestors = 1000

// findPrevious finds the call a new call is compared with — the latest
// call of its lineage (thread, graph path, node) on its own branch — and
// the dimensions that changed since (the pending changes of R11).
//
// On the checkpoint the call's step runs from, only earlier calls of the
// same task count (a retry, a second call in one node): Send siblings of
// the same step run concurrently and are no baseline for each other. On
// the ancestors, with Config.Checkpoints, the nearest call wins, so a
// fork compares with its parent branch; without it, the latest call of
// the lineage.
func (c *Cache) findPrevious(ctx context.Context, cl *call) {
	ts := cl.ts
	site := cl.site
	ts.mu.Lock()
	cl.generation = ts.latches.Generation
	recs := ts.byLineage[site.lineageKey]
	ts.mu.Unlock()
	ckpt := site.task.CheckpointID
	usable := func(r *Record) bool {
		// A fire-and-forget fork (skip cache write) wrote nothing the
		// lineage goes on from: it is no baseline but for another such
		// fork.
		if r.Lineage == "fork:skip_write" && !site.skipWrite {
			return false
		}
		return r.Generation == cl.generation && r.Error == "" && (ckpt == "" || r.CheckpointID != ckpt || r.TaskID == site.task.TaskID)
	}
	var latest *Record
	for i := len(recs) - 1; i >= 0; i-- {
		if usable(recs[i]) {
			latest = recs[i]
			break
		}
	}
	prev := latest
	if c.cfg.Checkpoints != nil && ckpt != "" && latest != nil && latest.CheckpointID != ckpt {
		var err error
		prev, err = c.onBranch(ctx, cl, recs, usable)
		if err != nil {
			// The branch cannot be walked: the latest call of the lineage
			// may be on another branch, and comparing with it could claim
			// a break that is none, or miss one. No baseline, then, and
			// the record says why.
			cl.baselineUnknown = "the call's checkpoint history could not be read, so its previous call on this branch is unknown; no break is judged"
			c.reportError(err)
			prev, latest = nil, nil
		}
	}
	cl.prev = prev
	switch {
	case site.skipWrite:
		cl.lineage = "fork:skip_write"
	case site.isPush():
		cl.lineage = "fork:send"
	case prev != latest:
		cl.lineage = "fork:branch"
	default:
		cl.lineage = "main"
	}
	if prev != nil {
		cl.pending, cl.changedTool, cl.changedSys = diff(&prev.Hashes, &cl.hashes)
	}
	if cl.shared != nil {
		cl.shareBaseline()
	}
}

// onBranch walks up from the call's checkpoint to the nearest ancestor
// with a usable call of the lineage (nil: none).
//
// A checkpoint the saver does not hold yet (DurabilityAsync saves the
// step's checkpoint while its tasks run) is waited for once
// (engine.WaitCheckpoint). When the walk cannot go on — the saver
// fails, the wait fails (ErrCheckpointNotSaved under DurabilityExit,
// where nothing is saved before the run ends; the context ended), or the
// checkpoint is still missing after it — it returns an error: the
// baseline is unknown, and the latest call is no stand-in for it (on a
// fork it is another branch's).
func (c *Cache) onBranch(ctx context.Context, cl *call, recs []*Record, usable func(*Record) bool) (*Record, error) {
	at := map[string]*Record{}
	for _, r := range recs {
		if usable(r) && r.CheckpointID != "" {
			at[r.CheckpointID] = r // the latest per checkpoint
		}
	}
	ts := cl.ts
	id := cl.site.task.CheckpointID
	waited := false
	for range maxAncestors {
		if id == "" {
			return nil, nil
		}
		if r := at[id]; r != nil {
			return r, nil
		}
		ts.mu.Lock()
		parent, ok := ts.parents[id]
		ts.mu.Unlock()
		if !ok {
			cfg := checkpoints.Config{ThreadID: ts.id, Namespace: cl.site.task.Namespace, CheckpointID: id}
			tup, err := c.cfg.Checkpoints.Get(ctx, cfg)
			if err == nil && tup == nil && !waited {
				// Not saved yet (DurabilityAsync): wait for the run's
				// saves, once, and look again.
				waited = true
				if err = engine.WaitCheckpoint(ctx); err == nil {
					tup, err = c.cfg.Checkpoints.Get(ctx, cfg)
				}
			}
			switch {
			case err != nil:
				return nil, fmt.Errorf("promptcache: thread %q: reading checkpoint %s for the previous call of %s: %w", ts.id, id, cl.site.lineageKey, err)
			case tup == nil:
				return nil, fmt.Errorf("promptcache: thread %q: checkpoint %s is not saved, so the previous call of %s is unknown", ts.id, id, cl.site.lineageKey)
			}
			if tup.ParentConfig != nil {
				parent = tup.ParentConfig.CheckpointID
			}
			ts.mu.Lock()
			ts.parents[id] = parent
			ts.mu.Unlock()
		}
		id = parent
	}
	return nil, nil
}

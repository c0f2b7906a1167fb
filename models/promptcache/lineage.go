package promptcache

import (
	"context"

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
		prev = c.onBranch(ctx, cl, recs, usable, latest)
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
// with a usable call of the lineage.
//
// A checkpoint the saver does not hold yet (DurabilityAsync saves the
// step's checkpoint while its tasks run) is waited for once
// (engine.WaitCheckpoint); under DurabilityExit, where nothing is saved
// before the run ends, the walk falls back to latest, which is exact for
// a linear thread.
func (c *Cache) onBranch(ctx context.Context, cl *call, recs []*Record, usable func(*Record) bool, latest *Record) *Record {
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
			return nil
		}
		if r := at[id]; r != nil {
			return r
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
				if werr := engine.WaitCheckpoint(ctx); werr == nil {
					tup, err = c.cfg.Checkpoints.Get(ctx, cfg)
				}
			}
			if err != nil || tup == nil {
				c.reportError(err)
				return latest
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
	return nil
}

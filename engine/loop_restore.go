package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine/channels"
)

// load restores the thread's checkpoint, or starts empty.
func (l *loop) load(ctx context.Context) error {
	var tup *checkpoints.Tuple
	if l.saver != nil {
		var err error
		tup, err = l.saver.Get(ctx, checkpoints.Config{ThreadID: l.opts.ThreadID, Namespace: l.ns, CheckpointID: l.opts.CheckpointID})
		if err != nil {
			return fmt.Errorf("load checkpoint: %w", err)
		}
		if tup == nil && l.opts.CheckpointID != "" {
			return fmt.Errorf("%w: thread %q has no checkpoint %q", checkpoints.ErrInvalidConfig, l.opts.ThreadID, l.opts.CheckpointID)
		}
	}
	return l.restore(tup)
}

// restore sets the loop's state from a saved checkpoint (nil: empty).
func (l *loop) restore(tup *checkpoints.Tuple) error {
	n := len(l.g.specs)
	l.rd, l.stateVal, l.stateAll = nil, nil, true
	nodes := len(l.g.nodeList)
	if m := l.mem; m != nil && len(m.seen) == nodes && len(m.grouped) == n {
		// The buffers of an earlier run: seen keeps its storage aside.
		l.seenStore, l.seen = m.seen, make([][]int64, nodes)
		// m.chans holds the earlier run's channels, emptied (see release).
		l.chans, l.versions, l.seenDirty = m.chans[:n], reuse(m.versions, n), reuse(m.seenDirty, nodes)
		l.grouped, l.touchedSet = m.grouped, m.touchedSet
		l.mem = nil
	} else {
		l.chans = make([]channels.Channel, n)
		l.versions = make([]int64, n)
		l.seen = make([][]int64, nodes)
		l.seenDirty = make([]bool, nodes)
		l.grouped = make([][]any, n)
		l.touchedSet = make([]bool, n)
	}
	l.maxVersion = 0
	l.seenFrozen = make([][]int64, nodes)
	// Any volatile channel may hold a value after a restore.
	l.volFull = append(l.volFull[:0], l.g.volatile...)
	l.volIn = reuse(l.volIn, n)
	for _, c := range l.g.volatile {
		l.volIn[c] = true
	}
	l.step = -1
	if tup == nil {
		for i, spec := range l.g.specs {
			if err := l.restoreChannel(i, spec, nil); err != nil {
				return err
			}
		}
		l.newCheckpointID()
		return nil
	}
	cp := tup.Checkpoint
	for i, spec := range l.g.specs {
		if err := l.restoreChannel(i, spec, cp.ChannelValues[l.g.chanNames[i]]); err != nil {
			return fmt.Errorf("%w: restore channel %q from checkpoint %s: %w", ErrCheckpointMismatch, l.g.chanNames[i], cp.ID, err)
		}
	}
	for c, v := range cp.ChannelVersions {
		if i, ok := l.g.chanIdx[c]; ok {
			l.versions[i] = v
			l.maxVersion = max(l.maxVersion, v)
		}
	}
	for name, vs := range cp.VersionsSeen {
		if name == interruptKey {
			l.seenInterrupt = l.versionsFromMap(vs)
			continue
		}
		node, ok := l.g.nodes[name]
		if !ok {
			sv := checkpoints.SeenVersions{Node: name, Channels: slices.Sorted(maps.Keys(vs))}
			sv.Versions = make([]int64, len(sv.Channels))
			for i, c := range sv.Channels {
				sv.Versions[i] = vs[c]
			}
			l.extraSeen = append(l.extraSeen, sv)
			continue
		}
		s := make([]int64, len(node.trig))
		for k, t := range node.Triggers {
			s[k] = vs[t]
		}
		l.seen[node.idx] = s
	}
	slices.SortFunc(l.extraSeen, func(a, b checkpoints.SeenVersions) int { return strings.Compare(a.Node, b.Node) })
	if cp.UpdatedChannels != nil {
		l.updatedKnown = true
		for _, c := range cp.UpdatedChannels {
			if i, ok := l.g.chanIdx[c]; ok {
				l.updated = append(l.updated, i)
			}
		}
	}
	l.step = tup.Metadata.Step + 1
	l.setCheckpointID(cp.ID)
	l.ckptCfg = tup.Config
	l.saved = slices.Clone(l.versions)
	l.hasSaved = true
	l.pending = tup.PendingWrites
	l.loadedParent, l.loadedMeta = tup.ParentConfig, tup.Metadata
	return nil
}

// restoreChannel sets channel i from its saved data. A channel without
// data keeps the emptied channel an earlier run left in its place, when
// there is one.
func (l *loop) restoreChannel(i int, spec channels.Channel, data json.RawMessage) error {
	if data == nil && l.chans[i] != nil {
		return nil
	}
	ch, err := spec.FromCheckpoint(data)
	if err != nil {
		return err
	}
	l.chans[i] = ch
	return nil
}

func (l *loop) versionsFromMap(m map[string]int64) []int64 {
	out := make([]int64, len(l.g.specs))
	for c, v := range m {
		if i, ok := l.g.chanIdx[c]; ok {
			out[i] = v
		}
	}
	return out
}

func (l *loop) hasVersions() bool {
	for _, v := range l.versions {
		if v > 0 {
			return true
		}
	}
	return false
}

// newCheckpointID starts a new checkpoint. Its id is materialised only
// when something observes it (a saver, a listener, a cache, a task id).
func (l *loop) newCheckpointID() {
	if l.needIDs {
		b := newCheckpointBytes()
		l.ckptID, l.ckptBytes = formatUUIDIn(&l.idText, b), b
		return
	}
	l.ckptID, l.ckptLazy = "", true
}

func (l *loop) checkpointBytes() [16]byte {
	if l.ckptLazy {
		b := newCheckpointBytes()
		l.ckptID, l.ckptBytes = formatUUIDIn(&l.idText, b), b
		l.ckptLazy = false
	}
	return l.ckptBytes
}

func (l *loop) setCheckpointID(id string) {
	l.ckptID = id
	l.ckptBytes = idBytes(id)
}

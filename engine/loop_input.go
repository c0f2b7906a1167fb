package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/superstep-dev/superstep/checkpoints"
)

// first applies the run's input before the first superstep.
func (l *loop) first(ctx context.Context, input any) error {
	l.stop = l.step + l.opts.RecursionLimit + 1
	l.loaded = nil
	var cmd *Command
	switch c := input.(type) {
	case Command:
		cmd = &c
	case *Command:
		cmd = c
	}
	if input == nil || cmd != nil {
		if !l.hasVersions() {
			return fmt.Errorf("%w: nothing to resume on thread %q; pass an input", ErrEmptyInput, l.opts.ThreadID)
		}
		// Time travel, as upstream: a run from an explicit checkpoint that
		// answers no interrupt (a nil input, or a Command without Resume).
		// A Command that resumes at the head's own id is a resume.
		travel := l.opts.CheckpointID != "" && (cmd == nil || cmd.Resume == nil)
		var forkFrom map[taskKey]string
		if travel {
			// Answers given on the old branch are not reused (interrupts
			// fire again), nor are the writes of tasks that ran from it.
			l.pending = slices.DeleteFunc(slices.Clone(l.pending), func(pw checkpoints.PendingWrite) bool { return pw.Channel == resumeKey })
			l.replaying = true
			if l.forksOnTravel() {
				var err error
				if forkFrom, err = l.subgraphNamespaces(); err != nil {
					return err
				}
			}
		}
		if cmd != nil {
			if err := l.applyCommand(ctx, cmd); err != nil {
				return err
			}
		}
		if err := l.applyNullWrites(); err != nil {
			return err
		}
		// Resuming: acknowledge breakpoints so they do not fire again
		// until something changes.
		l.seenInterrupt = slices.Clone(l.versions)
		if forkFrom != nil {
			// The branch is visible before anything runs: a fork
			// checkpoint one step after the one travelled to, which the
			// first tick reports (the one travelled to is not reported
			// again).
			l.pending = nil
			if l.opts.Durability == DurabilityExit {
				// The fork's values hold the Command's writes.
				l.exitWrites = l.exitWrites[:0]
			}
			if err := l.putCheckpoint(ctx, checkpoints.SourceFork); err != nil {
				return err
			}
			if err := l.carrySubgraphs(ctx, forkFrom); err != nil {
				return err
			}
		} else if l.emit != nil && l.saver != nil {
			l.loaded = &CheckpointLoaded{CheckpointSaved{Config: l.ckptCfg, Parent: l.loadedParent, Metadata: l.loadedMeta}}
		}
		if l.emit != nil {
			l.emit.send(ValuesEmitted{Namespace: l.ns, Step: l.step, Values: l.values()})
		}
		return nil
	}
	writes, err := l.mapInput(input)
	if err != nil {
		return err
	}
	if len(writes) == 0 {
		return fmt.Errorf("%w: the input wrote no channel", ErrEmptyInput)
	}
	// New input on a thread: tasks that were pending are discarded, and
	// their triggers marked seen together with the input writes.
	discard, err := l.prepare()
	if err != nil {
		return err
	}
	in := inputTaskOf(l, writes)
	all := append(slices.Clone(discard), in)
	// As upstream, the input makes no values part of its own (the first
	// step's values show it).
	l.quietValues = true
	_, err = l.apply(all)
	l.quietValues = false
	if err != nil {
		return err
	}
	l.pending = nil
	return l.putCheckpoint(ctx, checkpoints.SourceInput)
}

// applyNullWrites applies the writes a Command left for the thread (and
// picks up its resume answer) before the step they precede.
func (l *loop) applyNullWrites() error {
	writes := slices.Clone(l.nullWrites)
	for _, pw := range l.pending {
		if pw.TaskID != nullTaskID {
			continue
		}
		if pw.Channel == resumeKey {
			var v any
			if err := json.Unmarshal(pw.Value, &v); err == nil {
				l.rs.nullResume, l.rs.hasNull = v, true
			}
			continue
		}
		v, err := l.decodeWrite(pw.Channel, pw.Value)
		if err != nil {
			return err
		}
		writes = append(writes, KV{Key: pw.Channel, Value: v})
	}
	if len(writes) == 0 {
		return nil
	}
	// The step that follows must still consider the checkpoint's own
	// updated channels (its pending tasks), plus whatever these writes
	// touched (a Goto's branch channel).
	before, known := slices.Clone(l.updated), l.updatedKnown
	// The state these writes make is streamed once, as the state the run
	// resumes from, not as a step's values.
	l.quietValues = true
	_, err := l.apply([]*task{inputTaskOf(l, writes)})
	l.quietValues = false
	if err != nil {
		return err
	}
	if !known {
		l.updatedKnown = false
		return nil
	}
	for _, c := range before {
		if !slices.Contains(l.updated, c) {
			l.updated = append(l.updated, c)
		}
	}
	slices.Sort(l.updated)
	return nil
}

// forksOnTravel says whether time travel to the loaded checkpoint writes
// a fork checkpoint first: as upstream, unless the checkpoint is itself an
// edit or a fork (UpdateState, a copy, an earlier fork), which is run from
// directly.
func (l *loop) forksOnTravel() bool {
	if l.saver == nil {
		return false
	}
	src := l.loadedMeta.Source
	return src != checkpoints.SourceUpdate && src != checkpoints.SourceFork
}

func pendingFor(taskID string, w checkpoints.Write) checkpoints.PendingWrite {
	return checkpoints.PendingWrite{TaskID: taskID, Channel: w.Channel, Value: w.Value}
}

func (l *loop) mapInput(input any) ([]KV, error) {
	if l.g.mapInput != nil {
		return l.g.mapInput(input)
	}
	in := l.g.cfg.InputChannels
	if len(in) == 1 {
		// A map holding exactly the input channel's name is that channel's
		// value: how a JSON form (the Studio's) gives a raw input.
		if m, ok := input.(map[string]any); ok && len(m) == 1 {
			if v, ok := m[in[0]]; ok {
				return []KV{{Key: in[0], Value: v}}, nil
			}
		}
		return []KV{{Key: in[0], Value: input}}, nil
	}
	m, ok := input.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("input must be a map keyed by the input channels %v, got %T", in, input)
	}
	var out []KV
	for _, c := range in {
		if v, ok := m[c]; ok {
			out = append(out, KV{Key: c, Value: v})
		}
	}
	return out, nil
}

package engine

import (
	"fmt"
	"slices"
)

// apply is upstream's apply_writes: the barrier at the end of a superstep.
// It returns the indexes of the channels updated (those that can trigger
// nodes next).
func (l *loop) apply(tasks []*task) ([]int, error) {
	l.stateVal = nil
	sortTasks(tasks)
	bump := false
	for _, t := range tasks {
		if len(t.triggers) > 0 {
			bump = true
		}
		n := t.node
		if n == nil {
			continue
		}
		s := l.seen[n.idx]
		if s == nil {
			if n.idx < len(l.seenStore) && cap(l.seenStore[n.idx]) >= len(n.trig) {
				s = l.seenStore[n.idx][:len(n.trig)]
				clear(s)
			} else {
				s = make([]int64, len(n.trig))
			}
			l.seen[n.idx] = s
		}
		l.seenDirty[n.idx] = true
		if !t.push && !t.asUpdate {
			for k, c := range n.trig {
				if v := l.versions[c]; v > 0 {
					s[k] = v
				}
			}
		}
	}
	next := l.maxVersion + 1
	l.bumps = l.bumps[:0]
	track := l.g.statePlan != nil && l.stateBuf != nil && !l.stateAll
	setVersion := func(c int) {
		if l.emit != nil {
			l.bumps = append(l.bumps, ChannelBump{Channel: l.g.chanNames[c], Old: l.versions[c], New: next})
		}
		l.versions[c] = next
		l.maxVersion = next
		if track {
			if len(l.stateDirty) < len(l.chans) {
				l.stateDirty = append(l.stateDirty, c)
			} else {
				l.stateAll = true
			}
		}
	}
	for _, t := range tasks {
		if t.node == nil || t.push || t.asUpdate {
			continue
		}
		for _, c := range t.node.trig {
			if l.versions[c] != next && l.chans[c].Consume() {
				setVersion(c)
			}
		}
	}
	// Group writes by channel in barrier order.
	for _, c := range l.touched {
		l.grouped[c] = l.grouped[c][:0]
		l.touchedSet[c] = false
	}
	l.touched = l.touched[:0]
	for _, t := range tasks {
		for i, w := range t.writes {
			if reservedWrite(w.Key) {
				continue
			}
			c, ok := t.chanOf(i)
			if !ok {
				return nil, fmt.Errorf("%w: node %q wrote to unknown channel %q", ErrInvalidUpdate, t.name, w.Key)
			}
			if !l.touchedSet[c] {
				l.touchedSet[c] = true
				l.touched = append(l.touched, c)
			}
			l.grouped[c] = append(l.grouped[c], w.Value)
		}
	}
	updated := l.updated[:0]
	for _, c := range l.touched {
		ch := l.chans[c]
		changed, err := ch.Update(l.grouped[c])
		if err != nil {
			return nil, fmt.Errorf("at key %q: %w", l.g.chanNames[c], err)
		}
		if changed {
			setVersion(c)
			if ch.IsAvailable() {
				updated = append(updated, c)
			}
		}
	}
	if bump {
		// Only channels that may hold something an unwritten step clears
		// are asked (volFull); the rest are empty or never change.
		next := l.volNext[:0]
		for _, c := range l.volFull {
			l.volIn[c] = false
			if l.touchedSet[c] {
				continue // written this step: re-added below
			}
			ch := l.chans[c]
			if changed, _ := ch.Update(nil); changed {
				setVersion(c)
				if ch.IsAvailable() {
					updated = append(updated, c)
				}
			}
			if l.g.volKind[c] == volUnknown || ch.IsAvailable() {
				next = append(next, c)
				l.volIn[c] = true
			}
		}
		l.volFull, l.volNext = next, l.volFull[:0]
		triggers := false
		for _, c := range updated {
			if len(l.g.trigNodes[c]) > 0 {
				triggers = true
				break
			}
		}
		if !triggers {
			for c, ch := range l.chans {
				if ch.Finish() {
					setVersion(c)
					if ch.IsAvailable() && !slices.Contains(updated, c) {
						updated = append(updated, c)
					}
				}
			}
		}
	}
	added := false
	for _, c := range l.touched {
		if l.g.volKind[c] != 0 && !l.volIn[c] {
			l.volFull = append(l.volFull, c)
			l.volIn[c] = true
			added = true
		}
	}
	if added {
		sortFew(l.volFull) // bumps are reported in channel order
	}
	sortFew(updated)
	l.updated, l.updatedKnown = updated, true
	if l.emit != nil {
		names := make([]string, len(updated))
		for i, c := range updated {
			names[i] = l.g.chanNames[c]
		}
		ev := BarrierApplied{Namespace: l.ns, Step: l.step, Bumps: slices.Clone(l.bumps), Updated: names}
		for _, c := range l.g.streamIdx {
			if !l.quietValues && slices.Contains(updated, c) {
				ev.Values = l.values()
				break
			}
		}
		l.emit.send(ev)
	}
	return updated, nil
}

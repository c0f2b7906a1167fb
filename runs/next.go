package runs

import (
	"slices"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
)

// NextIndex infers a checkpoint's next tasks from its version maps
// (channel versions, versions seen, updated channels) without loading a
// value, for pages that list many checkpoints saved before checkpoints
// carried their next tasks (checkpoints.Checkpoint.Next is nil): loading
// every such checkpoint's state to plan them would cost a history page
// the size of every state in it.
type NextIndex struct {
	trig  triggerIndex
	order map[string]int
}

// NewNextIndex prepares inference for one graph.
func NewNextIndex(g engine.Compiled) *NextIndex {
	x := &NextIndex{trig: newTriggerIndex(g), order: map[string]int{}}
	for i, n := range g.Pregel().NodeNames() {
		x.order[n] = i
	}
	return x
}

// Next returns the nodes the checkpoint's pulled tasks run, in the
// engine's order. exact is false when the header cannot tell: the
// checkpoint holds Sends (their targets are values) or does not record
// which channels its step updated (a state edit); load its state then.
//
// A node runs next when one of its trigger channels was updated by the
// step that made the checkpoint (the engine's updated channels, which are
// only channels holding a value) with a version newer than the node has
// seen: the engine's own rule.
func (x *NextIndex) Next(cp *checkpoints.Checkpoint) (next []string, exact bool) {
	if cp == nil || cp.UpdatedChannels == nil {
		return nil, false
	}
	exact = true
	for _, ch := range cp.UpdatedChannels {
		if ch == checkpoints.TasksChannel {
			exact = false
			continue
		}
		for _, n := range x.trig.triggered(ch) {
			if cp.ChannelVersions[ch] > cp.VersionsSeen[n][ch] && !slices.Contains(next, n) {
				next = append(next, n)
			}
		}
	}
	slices.SortFunc(next, func(a, b string) int { return x.order[a] - x.order[b] })
	return next, exact
}

// KnownNext returns the next tasks of the thread's checkpoints that its
// retained live events announced, by checkpoint id: exact, Sends
// included, and free to read.
func (m *Manager) KnownNext(threadID string) map[string][]string {
	// Only a thread this process holds has retained events.
	m.mu.Lock()
	t, ok := m.threads[threadID]
	m.mu.Unlock()
	if !ok {
		return nil
	}
	h := t.hub
	out := map[string][]string{}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range h.log {
		if ev.Kind == KindCheckpoint && ev.Checkpoint != "" {
			out[ev.Checkpoint] = ev.Next
		}
	}
	return out
}

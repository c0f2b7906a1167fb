package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

// A save handed back for a later checkpoint keeps nothing of the one it
// held: a graph keeps its runs' saves for its next runs (loopMem.saves),
// and they must not keep a checkpoint's values, metadata or writes alive,
// however large.
func TestAGivenSaveKeepsNothingOfItsCheckpoint(t *testing.T) {
	t.Parallel()
	p := newPersister(nil, nil)
	defer p.wait()
	s := p.take()
	big := json.RawMessage(`"` + string(make([]byte, 1<<20)) + `"`)
	s.parent = checkpoints.Config{ThreadID: "t", CheckpointID: "parent"}
	s.md = checkpoints.Metadata{RunID: "run", Parents: map[string]string{"": "parent"}, Extra: map[string]any{"k": "v"}}
	s.frame.ints = append(s.frame.ints, 1, 2, 3)
	s.frame.news = append(s.frame.news, checkpoints.FrameValue{Index: 1, Value: big})
	s.frame.seen = append(s.frame.seen, checkpoints.SeenVersions{Node: "n", Channels: []string{"a"}, Versions: s.frame.ints[2:]})
	s.frame.f = checkpoints.Frame{ID: "id", Channels: []string{"a", "b"}, Versions: s.frame.ints[:2], New: s.frame.news, Seen: s.frame.seen, Next: []string{"n"}}
	s.f = &s.frame.f
	s.keepWrites([]checkpoints.TaskWrites{{TaskID: "task", Writes: []checkpoints.Write{{Channel: "a", Value: big}}}})
	p.give(s)

	if s.parent != (checkpoints.Config{}) || s.f != nil || s.md.RunID != "" || s.md.Parents != nil || s.md.Extra != nil {
		t.Errorf("a given save keeps its checkpoint's parent %+v, frame %p or metadata %+v", s.parent, s.f, s.md)
	}
	if s.frame.f.ID != "" || s.frame.f.New != nil || s.frame.f.Seen != nil || s.frame.f.Channels != nil || s.frame.f.Next != nil {
		t.Errorf("a given save keeps its frame: %+v", s.frame.f)
	}
	if i := slices.IndexFunc(s.frame.news[:cap(s.frame.news)], func(v checkpoints.FrameValue) bool { return v.Value != nil }); i >= 0 {
		t.Errorf("a given save keeps new value %d (%d bytes)", i, len(s.frame.news[:cap(s.frame.news)][i].Value))
	}
	if i := slices.IndexFunc(s.frame.seen[:cap(s.frame.seen)], func(v checkpoints.SeenVersions) bool { return v.Node != "" || v.Channels != nil || v.Versions != nil }); i >= 0 {
		t.Errorf("a given save keeps versions seen entry %d", i)
	}
	if i := slices.IndexFunc(s.writes[:cap(s.writes)], func(w checkpoints.TaskWrites) bool { return w.TaskID != "" || w.Writes != nil }); i >= 0 {
		t.Errorf("a given save keeps the writes of task %d", i)
	}
	if i := slices.IndexFunc(s.wbuf[:cap(s.wbuf)], func(w checkpoints.Write) bool { return w.Channel != "" || w.Value != nil }); i >= 0 {
		t.Errorf("a given save keeps write %d", i)
	}
	if again := p.take(); again != s {
		t.Errorf("the next checkpoint is built in a new save, not in the one given back")
	}
}

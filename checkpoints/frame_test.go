package checkpoints_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// frameStep is one put of TestPutFrameReadsAsPut: a frame, or (cp set) a
// checkpoint put as maps, as UpdateState puts them.
type frameStep struct {
	parent string
	frame  *checkpoints.Frame
	cp     *checkpoints.Checkpoint
	newV   map[string]int64
	writes []checkpoints.TaskWrites
}

// A checkpoint put as a Frame reads back exactly as the same checkpoint
// put as maps: values, versions, versions seen, updated channels, pending
// writes, through Get and List, whether its parent was put as a frame or
// as maps, shares its name table or not, and on a fork.
func TestPutFrameReadsAsPut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := []string{"a", "b", "c"}
	other := []string{"a", "b", "c", "d"} // another table: matched by name
	trig := []string{"a"}
	ts := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	steps := []frameStep{
		{frame: &checkpoints.Frame{ID: "1", TS: ts, Channels: names, Versions: []int64{1, 0, 1},
			New:  []checkpoints.FrameValue{{Index: 0, Value: raw(`"a1"`)}, {Index: 2}},
			Seen: []checkpoints.SeenVersions{{Node: "__input__"}}, UpdatedChannels: []string{"a", "c"}, Next: []string{"n"}}},
		{parent: "1", frame: &checkpoints.Frame{ID: "2", TS: ts.Add(1), Channels: names, Versions: []int64{2, 2, 1},
			New:  []checkpoints.FrameValue{{Index: 0, Value: raw(`"a2"`)}, {Index: 1, Value: raw(`{"b":[1,2]}`)}},
			Seen: []checkpoints.SeenVersions{{Node: "__input__"}, {Node: "n", Channels: trig, Versions: []int64{1}}}, Next: []string{}},
			writes: []checkpoints.TaskWrites{{TaskID: "t1", Writes: []checkpoints.Write{{Channel: "a", Value: raw(`"a2"`)}, {Channel: "b", Value: raw(`{"b":[1,2]}`)}}}}},
		// Another name table: values found by name in the parent.
		{parent: "2", frame: &checkpoints.Frame{ID: "3", TS: ts.Add(2), Channels: other, Versions: []int64{3, 2, 1, 3},
			New:             []checkpoints.FrameValue{{Index: 0, Value: raw(`"a3"`)}, {Index: 3, Value: raw(`4`)}},
			Seen:            []checkpoints.SeenVersions{{Node: "n", Channels: trig, Versions: []int64{2}}, {Node: "m", Channels: other, Versions: []int64{0, 2, 0, 0}}},
			UpdatedChannels: []string{"a", "d"}, Next: []string{"m", "m"}}},
		// Maps after a frame, as a state update puts them.
		{parent: "3", cp: &checkpoints.Checkpoint{V: 1, ID: "4", TS: ts.Add(3),
			ChannelValues:   map[string]json.RawMessage{"d": raw(`5`)},
			ChannelVersions: map[string]int64{"a": 3, "b": 2, "c": 1, "d": 4},
			VersionsSeen:    map[string]map[string]int64{"n": {"a": 3}}, Next: []string{"n"}}, newV: map[string]int64{"d": 4}},
		// A frame after maps.
		{parent: "4", frame: &checkpoints.Frame{ID: "5", TS: ts.Add(4), Channels: names, Versions: []int64{5, 2, 1},
			New: []checkpoints.FrameValue{{Index: 0, Value: raw(`"a5"`)}}, UpdatedChannels: []string{}}},
		// A fork from 1 giving b version 2 with another value; a's
		// version 2 is not the parent's, so it takes the value first saved
		// at that version (Saver.Put's rule).
		{parent: "1", frame: &checkpoints.Frame{ID: "6", TS: ts.Add(5), Channels: names, Versions: []int64{2, 2, 1},
			New: []checkpoints.FrameValue{{Index: 1, Value: raw(`"fork"`)}}}},
		// The parent's table: unchanged values come by index.
		{parent: "2", frame: &checkpoints.Frame{ID: "8", TS: ts.Add(7), Channels: names, Versions: []int64{2, 2, 3},
			New: []checkpoints.FrameValue{{Index: 2, Value: raw(`true`)}}}},
		// No parent, carrying a version first saved by checkpoint 2.
		{frame: &checkpoints.Frame{ID: "7", TS: ts.Add(6), Channels: names, Versions: []int64{2, 0, 0}}},
	}
	frames, maps := checkpoints.NewMemory(), checkpoints.NewMemory()
	for _, s := range steps {
		cfg := checkpoints.Config{ThreadID: "t", CheckpointID: s.parent}
		md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: len(s.parent), Extra: map[string]any{"k": s.parent}}
		if s.cp != nil {
			for _, m := range []*checkpoints.Memory{frames, maps} {
				if _, err := m.Put(ctx, cfg, s.cp, md, s.newV); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		cp, newV, err := s.frame.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := maps.PutStep(ctx, cfg, s.writes, cp, md, newV); err != nil {
			t.Fatal(err)
		}
		if _, err := frames.PutFrame(ctx, cfg, s.writes, s.frame, md); err != nil {
			t.Fatalf("put frame %s: %v", s.frame.ID, err)
		}
	}
	got, err := frames.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := maps.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(steps) || !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("checkpoint %s put as a frame reads\n%+v\nput as maps\n%+v", want[i].Config.CheckpointID, *got[i].Checkpoint, *want[i].Checkpoint)
			}
		}
		t.Fatalf("%d checkpoints put as frames read differently from maps (%d)", len(got), len(want))
	}
	// Spot checks that the comparison is about the right things.
	byID := map[string]*checkpoints.Tuple{}
	for _, tup := range got {
		byID[tup.Config.CheckpointID] = tup
	}
	checks := []struct {
		id, ch string
		want   string // "" means no value
	}{
		{"1", "a", `"a1"`}, {"1", "c", ""}, {"3", "b", `{"b":[1,2]}`}, {"3", "d", `4`},
		{"4", "a", `"a3"`}, {"5", "d", ""}, {"5", "b", `{"b":[1,2]}`}, {"6", "b", `"fork"`}, {"6", "a", `"a2"`}, {"7", "a", `"a2"`},
		{"8", "a", `"a2"`}, {"8", "b", `{"b":[1,2]}`}, {"8", "c", `true`},
	}
	for _, c := range checks {
		v, ok := byID[c.id].Checkpoint.ChannelValues[c.ch]
		if string(v) != c.want || ok != (c.want != "") {
			t.Errorf("checkpoint %s channel %s = %s (%v), want %q", c.id, c.ch, v, ok, c.want)
		}
	}
	if seen := byID["3"].Checkpoint.VersionsSeen; !reflect.DeepEqual(seen, map[string]map[string]int64{"n": {"a": 2}, "m": {"b": 2}}) {
		t.Errorf("versions seen of 3 = %v", seen)
	}
	if w := byID["1"].PendingWrites; len(w) != 2 || w[0].TaskID != "t1" {
		t.Errorf("pending writes of 1 = %+v, want task t1's two writes", w)
	}
	one, err := frames.Get(ctx, checkpoints.Config{ThreadID: "t", CheckpointID: "2"})
	if err != nil || !reflect.DeepEqual(one, byID["2"]) {
		t.Errorf("Get of a frame = %+v, %v; List gave %+v", one, err, byID["2"])
	}
}

// A bad frame is refused with a clear error and stores nothing.
func TestPutFrameRefusesBadFrames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	names := []string{"a", "b"}
	cases := []struct {
		name  string
		frame *checkpoints.Frame
		want  error
	}{
		{"no id", &checkpoints.Frame{Channels: names, Versions: []int64{1, 1}}, checkpoints.ErrInvalidConfig},
		{"versions do not match channels", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1}}, checkpoints.ErrInvalidConfig},
		{"new out of order", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 1},
			New: []checkpoints.FrameValue{{Index: 1}, {Index: 0}}}, checkpoints.ErrInvalidConfig},
		{"new without a version", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			New: []checkpoints.FrameValue{{Index: 1}}}, checkpoints.ErrInvalidConfig},
		{"new out of range", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 1},
			New: []checkpoints.FrameValue{{Index: 2}}}, checkpoints.ErrInvalidConfig},
		{"channels out of order", &checkpoints.Frame{ID: "x", Channels: []string{"b", "a"}, Versions: []int64{1, 1}}, checkpoints.ErrInvalidConfig},
		{"a channel twice", &checkpoints.Frame{ID: "x", Channels: []string{"a", "a"}, Versions: []int64{1, 2}}, checkpoints.ErrInvalidConfig},
		{"NUL in a channel name", &checkpoints.Frame{ID: "x", Channels: []string{"a\x00"}, Versions: []int64{1}}, checkpoints.ErrInvalidValue},
		{"NUL in a value", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`"\u0000"`)}}}, checkpoints.ErrInvalidValue},
		{"invalid JSON", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`{`)}}}, checkpoints.ErrInvalidValue},
		{"seen mismatch", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			Seen: []checkpoints.SeenVersions{{Node: "n", Channels: names, Versions: []int64{1}}}}, checkpoints.ErrInvalidConfig},
		{"bad node name", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			Seen: []checkpoints.SeenVersions{{Node: "\xff"}}}, checkpoints.ErrInvalidValue},
		{"NUL in a next node", &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0}, Next: []string{"n", "a\x00"}}, checkpoints.ErrInvalidValue},
	}
	for _, c := range cases {
		m := checkpoints.NewMemory()
		parent := &checkpoints.Frame{ID: "p", Channels: names, Versions: []int64{1, 0}, New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`0`)}}}
		if _, err := m.PutFrame(ctx, checkpoints.Config{ThreadID: "t"}, nil, parent, checkpoints.Metadata{}); err != nil {
			t.Fatal(err)
		}
		writes := []checkpoints.TaskWrites{{TaskID: "t1", Writes: []checkpoints.Write{{Channel: "a", Value: json.RawMessage(`1`)}}}}
		_, err := m.PutFrame(ctx, checkpoints.Config{ThreadID: "t", CheckpointID: "p"}, writes, c.frame, checkpoints.Metadata{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if got, _ := m.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{}); len(got) != 1 {
			t.Errorf("%s: %d checkpoints after a refused frame, want the parent only", c.name, len(got))
		}
		if got, _ := m.Get(ctx, checkpoints.Config{ThreadID: "t", CheckpointID: "p"}); got == nil || len(got.PendingWrites) != 0 {
			t.Errorf("%s: a refused frame stored its writes: %+v", c.name, got)
		}
		// Converting a frame of the wrong shape is an error, not a panic.
		if _, _, err := c.frame.Checkpoint(); c.want == checkpoints.ErrInvalidConfig && c.frame.ID != "" && !errors.Is(err, c.want) {
			t.Errorf("%s: Checkpoint() err = %v, want %v", c.name, err, c.want)
		}
	}
}

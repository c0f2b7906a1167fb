package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// frameStep is one put of TestPutFrameIsPutStep: a frame, or (cp set) a
// checkpoint put as maps, as a state update puts them.
type frameStep struct {
	parent string
	frame  *checkpoints.Frame
	cp     *checkpoints.Checkpoint
	newV   map[string]int64
	writes []checkpoints.TaskWrites
}

// frameSteps are checkpoints.TestPutFrameReadsAsPut's puts, with large
// values (blobs, a list growing by appends: deltas) and the engine's
// kind of step: its task's writes with the checkpoint.
func frameSteps() []frameStep {
	names := []string{"a", "b", "c", "msgs"}
	other := []string{"a", "b", "c", "d", "msgs"} // another table: matched by name
	trig := []string{"a"}
	ts := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	list := func(n int) json.RawMessage {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprintf("message %d: %s", i, strings.Repeat("x", 60)))
		}
		b, _ := json.Marshal(l)
		return b
	}
	return []frameStep{
		{frame: &checkpoints.Frame{ID: "1", TS: ts, Channels: names, Versions: []int64{1, 0, 1, 1},
			New:  []checkpoints.FrameValue{{Index: 0, Value: raw(`"a1"`)}, {Index: 2}, {Index: 3, Value: list(2)}},
			Seen: []checkpoints.SeenVersions{{Node: "__input__"}}, UpdatedChannels: []string{"a", "c", "msgs"}, Next: []string{"n"}}},
		{parent: "1", frame: &checkpoints.Frame{ID: "2", TS: ts.Add(1), Channels: names, Versions: []int64{2, 2, 1, 2},
			New:  []checkpoints.FrameValue{{Index: 0, Value: raw(`"a2"`)}, {Index: 1, Value: raw(`{"b":[1,2]}`)}, {Index: 3, Value: list(3)}},
			Seen: []checkpoints.SeenVersions{{Node: "__input__"}, {Node: "n", Channels: trig, Versions: []int64{1}}}, Next: []string{}},
			writes: []checkpoints.TaskWrites{{TaskID: "t1", TaskPath: "~pull/n", Writes: []checkpoints.Write{{Channel: "a", Value: raw(`"a2"`)}, {Channel: "b", Value: raw(`{"b":[1,2]}`)}}}}},
		// Another name table: values found by name in the parent.
		{parent: "2", frame: &checkpoints.Frame{ID: "3", TS: ts.Add(2), Channels: other, Versions: []int64{3, 2, 1, 3, 3},
			New:             []checkpoints.FrameValue{{Index: 0, Value: raw(`"a3"`)}, {Index: 3, Value: raw(`4`)}, {Index: 4, Value: list(4)}},
			Seen:            []checkpoints.SeenVersions{{Node: "n", Channels: trig, Versions: []int64{2}}, {Node: "m", Channels: other, Versions: []int64{0, 2, 0, 0, 0}}},
			UpdatedChannels: []string{"a", "d", "msgs"}, Next: []string{"m", "m"}},
			writes: []checkpoints.TaskWrites{{TaskID: "t2", Writes: []checkpoints.Write{{Channel: checkpoints.ErrorChannel, Value: raw(`"boom"`)}}}}},
		// Maps after a frame, as a state update puts them.
		{parent: "3", cp: &checkpoints.Checkpoint{V: 1, ID: "4", TS: ts.Add(3),
			ChannelValues:   map[string]json.RawMessage{"d": raw(`5`)},
			ChannelVersions: map[string]int64{"a": 3, "b": 2, "c": 1, "d": 4, "msgs": 3},
			VersionsSeen:    map[string]map[string]int64{"n": {"a": 3}}, Next: []string{"n"}}, newV: map[string]int64{"d": 4}},
		// A frame after maps.
		{parent: "4", frame: &checkpoints.Frame{ID: "5", TS: ts.Add(4), Channels: names, Versions: []int64{5, 2, 1, 5},
			New: []checkpoints.FrameValue{{Index: 0, Value: raw(`"a5"`)}, {Index: 3, Value: list(5)}}, UpdatedChannels: []string{}},
			// More writes than the statement's few-rows form takes.
			writes: []checkpoints.TaskWrites{
				{TaskID: "t5", TaskPath: "~pull/x", Writes: []checkpoints.Write{{Channel: "a", Value: raw(`1`)}, {Channel: "a", Value: raw(`2`)}, {Channel: "b", Value: raw(`3`)}}},
				{TaskID: "t6", TaskPath: "~push/y", Writes: []checkpoints.Write{{Channel: "a", Value: raw(`4`)}, {Channel: checkpoints.InterruptChannel, Value: raw(`5`)}, {Channel: "c", Value: raw(`6`)}}},
			}},
		// A fork from 1 giving b version 2 with another value; a's
		// version 2 is not the parent's, so it takes the value first saved
		// at that version (Saver.Put's rule).
		{parent: "1", frame: &checkpoints.Frame{ID: "6", TS: ts.Add(5), Channels: names, Versions: []int64{2, 2, 1, 1},
			New: []checkpoints.FrameValue{{Index: 1, Value: raw(`"fork"`)}}}},
		// The parent's table: unchanged values come by index.
		{parent: "2", frame: &checkpoints.Frame{ID: "8", TS: ts.Add(7), Channels: names, Versions: []int64{2, 2, 3, 2},
			New: []checkpoints.FrameValue{{Index: 2, Value: raw(`true`)}}},
			writes: []checkpoints.TaskWrites{{TaskID: "t3", Writes: []checkpoints.Write{{Channel: "c", Value: raw(`true`)}}}}},
		// No parent, carrying a version first saved by checkpoint 2.
		{frame: &checkpoints.Frame{ID: "7", TS: ts.Add(6), Channels: names, Versions: []int64{2, 0, 0, 2}}},
		// The same step saved again (a resumed step): the writes and the
		// checkpoint are upserted.
		{parent: "2", frame: &checkpoints.Frame{ID: "8", TS: ts.Add(8), Channels: names, Versions: []int64{2, 2, 3, 2},
			New: []checkpoints.FrameValue{{Index: 2, Value: raw(`false`)}}},
			writes: []checkpoints.TaskWrites{{TaskID: "t3", Writes: []checkpoints.Write{{Channel: "c", Value: raw(`false`)}}}}},
	}
}

// tableRows are a thread's rows in the saver's three tables, as text,
// without the thread id and the sequence numbers.
func tableRows(t *testing.T, pool *pgxpool.Pool, thread string) []string {
	t.Helper()
	return queryStrings(t, pool, `
		SELECT format('checkpoint %s %s %s %s %s %s %s %s %s %s', checkpoint_ns, checkpoint_id, parent_checkpoint_id,
		              encode(checkpoint, 'escape'), metadata, value_channels, value_versions, value_hashes, value_inline,
		              encode(parent_writes, 'escape'))
		FROM checkpoints WHERE thread_id = $1
		UNION ALL
		SELECT format('write %s %s %s %s %s %s %s %s', checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
		FROM checkpoint_writes WHERE thread_id = $1
		UNION ALL
		SELECT format('blob %s %s %s %s', hash, encoding, base, data) FROM checkpoint_blobs WHERE thread_id = $1
		ORDER BY 1`, thread)
}

// A step put with PutFrame stores exactly the rows PutStep stores for the
// frame's checkpoint (f.Checkpoint()), and both read back through List as
// its writes and checkpoint saved apart (PutWrites, Put) do: values inline, in blobs and as deltas, versions seen, Next,
// pending writes, forks, other name tables, maps between frames, a step
// saved again; from a saver that remembers the thread and from one that
// does not (the server resolves the values).
func TestPutFrameIsPutStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, cold := range []bool{false, true} {
		t.Run(fmt.Sprintf("cold=%v", cold), func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Schema(t, nil)
			frames, maps := pgsaver.New(pool, nil), pgsaver.New(pool, nil)
			steps := frameSteps()
			for i, st := range steps {
				if cold {
					// Every put from a saver that remembers nothing.
					frames, maps = pgsaver.New(pool, nil), pgsaver.New(pool, nil)
				}
				md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: len(st.parent), Extra: map[string]any{"k": st.parent}}
				if i%2 == 1 {
					// Without user keys, as the engine's puts mostly are.
					md = checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: "run <&> \u2028", Parents: map[string]string{"": "p\"1"}}
				}
				for _, th := range []string{"frames", "maps", "separate"} {
					cfg := checkpoints.Config{ThreadID: th, CheckpointID: st.parent}
					var err error
					switch {
					case st.cp != nil:
						_, err = frames.Put(ctx, cfg, st.cp, md, st.newV)
					case th == "frames":
						// PutFrame owns the frame: give it a copy of its values.
						_, err = frames.PutFrame(ctx, cfg, st.writes, cloneFrame(st.frame), md)
					case th == "separate":
						// Each task's writes, then the checkpoint, as a
						// saver without PutStep saves them.
						for _, tw := range st.writes {
							if err = maps.PutWrites(ctx, cfg, tw.Writes, tw.TaskID, tw.TaskPath); err != nil {
								t.Fatal(err)
							}
						}
						cp, newV, _ := st.frame.Checkpoint()
						_, err = maps.Put(ctx, cfg, cp, md, newV)
					default:
						cp, newV, cerr := st.frame.Checkpoint()
						if cerr != nil {
							t.Fatal(cerr)
						}
						_, err = maps.PutStep(ctx, cfg, st.writes, cp, md, newV)
					}
					if err != nil {
						t.Fatalf("%s: put %s: %v", th, stepID(st), err)
					}
				}
			}
			got, want := tableRows(t, pool, "frames"), tableRows(t, pool, "maps")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("rows put as frames:\n%s\nrows put as maps:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if n := len(got); n < len(steps)+4 {
				t.Errorf("only %d rows", n)
			}
			for _, s := range []*pgsaver.Saver{frames, pgsaver.New(pool, nil)} {
				gotList, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "frames"}, checkpoints.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wantList, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "maps"}, checkpoints.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// Saved apart, the writes are rows of checkpoint_writes;
				// carried by the step's checkpoint, they read back the same.
				sepList, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "separate"}, checkpoints.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(gotList) != len(steps)-1 || len(gotList) != len(wantList) || len(sepList) != len(wantList) {
					t.Fatalf("%d checkpoints put as frames, %d as maps, %d apart", len(gotList), len(wantList), len(sepList))
				}
				for i := range gotList {
					for name, tu := range map[string]*checkpoints.Tuple{"a frame": gotList[i], "writes and checkpoint apart": sepList[i]} {
						tu.Config.ThreadID = "maps"
						if tu.ParentConfig != nil {
							tu.ParentConfig.ThreadID = "maps"
						}
						if !reflect.DeepEqual(tu, wantList[i]) {
							t.Errorf("checkpoint %s put as %s reads differently from PutStep's:\n%+v\n%+v", wantList[i].Config.CheckpointID, name, tu, wantList[i])
						}
					}
				}
				tu, err := s.Get(ctx, checkpoints.Config{ThreadID: "frames", CheckpointID: "5"})
				if err != nil || string(tu.Checkpoint.ChannelValues["b"]) != `{"b":[1,2]}` || len(tu.Checkpoint.ChannelValues["msgs"]) < 300 {
					t.Errorf("Get of frame 5 = %+v, %v", tu, err)
				}
			}
		})
	}
}

func stepID(st frameStep) string {
	if st.cp != nil {
		return st.cp.ID
	}
	return st.frame.ID
}

func cloneFrame(f *checkpoints.Frame) *checkpoints.Frame {
	c := *f
	c.New = make([]checkpoints.FrameValue, len(f.New))
	for i, nv := range f.New {
		c.New[i] = checkpoints.FrameValue{Index: nv.Index, Value: append(json.RawMessage(nil), nv.Value...)}
		if nv.Value == nil {
			c.New[i].Value = nil
		}
	}
	return &c
}

// PutFrame refuses what PutStep refuses, with the same errors, and
// writes nothing: bad frames (as the memory saver refuses them), bad
// writes, bad metadata, a fence for another thread or one that was taken
// over (ErrFenced).
func TestPutFrameRefusesAsPutStep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	pgsaver.HoldLease(t, pool, "t", 3)
	names := []string{"a", "b"}
	root := &checkpoints.Frame{ID: "p", Channels: names, Versions: []int64{1, 0}, New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`0`)}}}
	if _, err := s.PutFrame(checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 3}), checkpoints.Config{ThreadID: "t"}, nil, root, checkpoints.Metadata{}); err != nil {
		t.Fatalf("PutFrame with the holder's fence: %v", err)
	}
	good := func() *checkpoints.Frame {
		return &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{2, 0}, New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`1`)}}}
	}
	one := []checkpoints.TaskWrites{{TaskID: "t1", Writes: []checkpoints.Write{{Channel: "a", Value: json.RawMessage(`1`)}}}}
	parent := checkpoints.Config{ThreadID: "t", CheckpointID: "p"}
	cases := []struct {
		name   string
		ctx    context.Context
		cfg    checkpoints.Config
		frame  *checkpoints.Frame
		md     checkpoints.Metadata
		writes []checkpoints.TaskWrites
		want   error
	}{
		{name: "no thread", cfg: checkpoints.Config{CheckpointID: "p"}, frame: good(), want: checkpoints.ErrInvalidConfig},
		{name: "no id", frame: &checkpoints.Frame{Channels: names, Versions: []int64{1, 1}}, want: checkpoints.ErrInvalidConfig},
		{name: "NUL in a channel name", frame: &checkpoints.Frame{ID: "x", Channels: []string{"a\x00"}, Versions: []int64{1}}, want: checkpoints.ErrInvalidValue},
		{name: "invalid JSON", frame: &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`{`)}}}, want: checkpoints.ErrInvalidValue},
		{name: "bad node name", frame: &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0},
			Seen: []checkpoints.SeenVersions{{Node: "\xff"}}}, want: checkpoints.ErrInvalidValue},
		{name: "NUL in a next node", frame: &checkpoints.Frame{ID: "x", Channels: names, Versions: []int64{1, 0}, Next: []string{"n", "a\x00"}},
			want: checkpoints.ErrInvalidValue},
		{name: "bad metadata", frame: good(), md: checkpoints.Metadata{RunID: "r\x00"}, want: checkpoints.ErrInvalidValue},
		{name: "bad write", frame: good(), writes: []checkpoints.TaskWrites{{TaskID: "t1", Writes: []checkpoints.Write{{Channel: "a", Value: json.RawMessage(`"\u0000"`)}}}},
			want: checkpoints.ErrInvalidValue},
		{name: "fence of another thread", ctx: checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "u", Token: 3}), frame: good(), writes: one},
		{name: "fence taken over", ctx: checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 2}), frame: good(), writes: one, want: checkpoints.ErrFenced},
	}
	for _, c := range cases {
		if c.ctx == nil {
			c.ctx = ctx
		}
		if c.cfg == (checkpoints.Config{}) {
			c.cfg = parent
		}
		before := rowCounts(t, pool, "t")
		_, err := s.PutFrame(c.ctx, c.cfg, c.writes, c.frame, c.md)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if cp, newV, cerr := c.frame.Checkpoint(); cerr == nil {
			_, stepErr := s.PutStep(c.ctx, c.cfg, c.writes, cp, c.md, newV)
			if stepErr == nil || err == nil || stepErr.Error() != err.Error() {
				t.Errorf("%s: PutFrame's error %v, PutStep's %v", c.name, err, stepErr)
			}
		}
		if after := rowCounts(t, pool, "t"); after != before {
			t.Errorf("%s: rows went from %v to %v", c.name, before, after)
		}
	}
}

// A step with only small values, saved with PutFrame or PutStep, is one
// row: the checkpoint, carrying the step's writes for its parent. Frames
// and maps store the same rows, and every checkpoint reads back with the
// pending writes the same writes and checkpoints saved apart (PutWrites,
// Put: rows of checkpoint_writes) read back with, for any number of writes.
func TestPutStepInlineWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	names := []string{"a", "b"}
	for _, th := range []string{"frames", "maps", "separate"} {
		cfg := checkpoints.Config{ThreadID: th}
		for n := range 7 {
			var writes []checkpoints.TaskWrites
			for i := range n {
				// Tasks of two writes each, the last maybe of one.
				if i%2 == 0 {
					task := fmt.Sprint("task", i/2)
					writes = append(writes, checkpoints.TaskWrites{TaskID: task, TaskPath: "~pull/" + task})
				}
				w := &writes[len(writes)-1]
				w.Writes = append(w.Writes, checkpoints.Write{Channel: names[i%2], Value: json.RawMessage(fmt.Sprint(i))})
			}
			f := &checkpoints.Frame{ID: fmt.Sprint("cp", n), TS: time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC), Channels: names,
				Versions: []int64{int64(n + 1), 1}, New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(fmt.Sprint(n))}}}
			if n == 0 {
				f.New = append(f.New, checkpoints.FrameValue{Index: 1, Value: json.RawMessage(`"b"`)})
			}
			md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: n}
			cp, newV, _ := f.Checkpoint()
			var err error
			switch th {
			case "frames":
				cfg, err = s.PutFrame(ctx, cfg, writes, f, md)
			case "maps":
				cfg, err = s.PutStep(ctx, cfg, writes, cp, md, newV)
			default:
				for _, tw := range writes {
					if err = s.PutWrites(ctx, cfg, tw.Writes, tw.TaskID, tw.TaskPath); err != nil {
						t.Fatal(err)
					}
				}
				cfg, err = s.Put(ctx, cfg, cp, md, newV)
			}
			if err != nil {
				t.Fatalf("%s: step with %d writes: %v", th, n, err)
			}
		}
	}
	if frames, maps := tableRows(t, pool, "frames"), tableRows(t, pool, "maps"); !reflect.DeepEqual(frames, maps) {
		t.Errorf("rows put as frames:\n%s\nrows put as maps:\n%s", strings.Join(frames, "\n"), strings.Join(maps, "\n"))
	}
	if got := rowCounts(t, pool, "frames"); got != [3]int{7, 21, 0} {
		t.Errorf("frames thread: (checkpoints, writes, blobs) = %v, want 7 checkpoints carrying 21 writes", got)
	}
	var writeRows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM checkpoint_writes WHERE thread_id IN ('frames', 'maps')`).Scan(&writeRows); err != nil || writeRows != 0 {
		t.Errorf("steps saved %d rows of checkpoint_writes (%v), want none: the checkpoint rows carry them", writeRows, err)
	}
	want := pendingByStep(t, s, "separate")
	if n := strings.Count(strings.Join(want, " "), "/"); n != 2*21 {
		t.Fatalf("the writes saved apart read back as %d, want 21 by Get and 21 by List:\n%s", n, strings.Join(want, "\n"))
	}
	for _, th := range []string{"frames", "maps"} {
		if got := pendingByStep(t, s, th); !reflect.DeepEqual(got, want) {
			t.Errorf("pending writes of the steps put as %s:\n%s\nput apart:\n%s", th, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// pendingByStep reads each checkpoint of thread (cp0 to cp6) and lists its
// pending writes, as Get and as List return them.
func pendingByStep(t *testing.T, s *pgsaver.Saver, thread string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for n := range 7 {
		tu, err := s.Get(ctx, checkpoints.Config{ThreadID: thread, CheckpointID: fmt.Sprint("cp", n)})
		if err != nil || tu == nil {
			t.Fatalf("get cp%d of %s: %v, %v", n, thread, tu, err)
		}
		out = append(out, fmt.Sprint("get cp", n, " ", writesOf(tu)))
	}
	list, err := s.List(ctx, checkpoints.ListQuery{ThreadID: thread}, checkpoints.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tu := range list {
		out = append(out, fmt.Sprint("list ", tu.Config.CheckpointID, " ", writesOf(tu)))
	}
	return out
}

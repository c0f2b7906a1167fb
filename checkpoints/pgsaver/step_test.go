package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/migrations"
)

// stepSavers are the StepSaver implementations, each fresh per test.
var stepSavers = []struct {
	name string
	new  func(t *testing.T) checkpoints.StepSaver
}{
	{"memory", func(*testing.T) checkpoints.StepSaver { return checkpoints.NewMemory() }},
	{"postgres", func(t *testing.T) checkpoints.StepSaver { return pgsaver.New(pgtest.Schema(t, nil), nil) }},
}

func stepCheckpoint(values map[string]string, versions map[string]int64) *checkpoints.Checkpoint {
	cp := &checkpoints.Checkpoint{
		V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now().UTC(),
		ChannelValues: map[string]json.RawMessage{}, ChannelVersions: versions,
		VersionsSeen: map[string]map[string]int64{"__input__": {}},
	}
	for ch, v := range values {
		cp.ChannelValues[ch] = json.RawMessage(v)
	}
	return cp
}

func writesOf(tu *checkpoints.Tuple) []string {
	var out []string
	for _, w := range tu.PendingWrites {
		out = append(out, w.TaskID+"/"+w.Channel+"="+string(w.Value))
	}
	return out
}

// TestPutStepIsPutWritesThenPut: a superstep saved with one PutStep reads
// back exactly as the same writes and checkpoint saved with PutWrites and
// Put: the writes against the parent (regular first-write-wins, special
// last-wins, a task named twice merged), the child with its carried and
// new values.
func TestPutStepIsPutWritesThenPut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ss := range stepSavers {
		t.Run(ss.name, func(t *testing.T) {
			t.Parallel()
			s := ss.new(t)
			big := `"` + "a value long enough to be kept in a blob rather than inline, " +
				"since it is more than one hundred and twenty-eight bytes of JSON in all" + `"`
			root := stepCheckpoint(map[string]string{"n": "0", "doc": big}, map[string]int64{"n": 1, "doc": 1})
			rcfg, err := s.Put(ctx, checkpoints.Config{ThreadID: "t"}, root, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1, "doc": 1})
			if err != nil {
				t.Fatal(err)
			}
			child := stepCheckpoint(map[string]string{"n": "1"}, map[string]int64{"n": 2, "doc": 1})
			writes := []checkpoints.TaskWrites{
				{TaskID: "b", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}},
				{TaskID: "a", TaskPath: "~pull/a", Writes: []checkpoints.Write{
					{Channel: checkpoints.ErrorChannel, Value: json.RawMessage(`"first"`)},
					{Channel: "n", Value: json.RawMessage("2")},
					{Channel: checkpoints.ErrorChannel, Value: json.RawMessage(`"last"`)},
				}},
				// Task b again: its regular write at index 0 is kept.
				{TaskID: "b", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("99")}}},
			}
			ccfg, err := s.PutStep(ctx, rcfg, writes, child, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2})
			if err != nil {
				t.Fatal(err)
			}
			if want := (checkpoints.Config{ThreadID: "t", CheckpointID: child.ID}); ccfg != want {
				t.Fatalf("PutStep returned %+v, want %+v", ccfg, want)
			}
			parent, err := s.Get(ctx, rcfg)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{`a/__error__="last"`, "a/n=2", "b/n=1"}
			if got := writesOf(parent); !slices.Equal(got, want) {
				t.Errorf("parent's writes = %v, want %v", got, want)
			}
			got, err := s.Get(ctx, ccfg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Checkpoint.ChannelValues["n"]) != "1" || string(got.Checkpoint.ChannelValues["doc"]) != big {
				t.Errorf("child values = %v", got.Checkpoint.ChannelValues)
			}
			if len(got.PendingWrites) != 0 || got.ParentConfig == nil || got.ParentConfig.CheckpointID != root.ID {
				t.Errorf("child = writes %v, parent %+v", writesOf(got), got.ParentConfig)
			}
			// Without writes PutStep is Put; a later step's writes land on
			// the child.
			next := stepCheckpoint(map[string]string{"n": "2"}, map[string]int64{"n": 3, "doc": 1})
			if _, err := s.PutStep(ctx, ccfg, nil, next, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"n": 3}); err != nil {
				t.Fatal(err)
			}
			latest, err := s.Get(ctx, checkpoints.Config{ThreadID: "t"})
			if err != nil || latest.Config.CheckpointID != next.ID || string(latest.Checkpoint.ChannelValues["doc"]) != big {
				t.Fatalf("latest = %+v, %v", latest, err)
			}
		})
	}
}

// TestPutStepIsAllOrNothing: a step that cannot be saved whole saves
// nothing, neither its writes nor its checkpoint.
func TestPutStepIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := []checkpoints.TaskWrites{{TaskID: "a", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}}}
	for _, tc := range []struct {
		name    string
		noID    bool
		writes  []checkpoints.TaskWrites
		value   string
		wantErr error
	}{
		{"bad write value", false, append(good, checkpoints.TaskWrites{TaskID: "b", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage(`"\u0000"`)}}}), "1", checkpoints.ErrInvalidValue},
		{"bad write channel", false, []checkpoints.TaskWrites{{TaskID: "b", Writes: []checkpoints.Write{{Channel: "\xff", Value: json.RawMessage("1")}}}}, "1", checkpoints.ErrInvalidValue},
		{"bad checkpoint value", false, good, `"\ud800"`, checkpoints.ErrInvalidValue},
		{"writes without a parent", true, good, "1", checkpoints.ErrInvalidConfig},
	} {
		for _, ss := range stepSavers {
			t.Run(tc.name+"/"+ss.name, func(t *testing.T) {
				t.Parallel()
				s := ss.new(t)
				cfg := checkpoints.Config{ThreadID: "t"}
				if !tc.noID {
					root := stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1})
					var err error
					if cfg, err = s.Put(ctx, cfg, root, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1}); err != nil {
						t.Fatal(err)
					}
				}
				child := stepCheckpoint(map[string]string{"n": tc.value}, map[string]int64{"n": 2})
				_, err := s.PutStep(ctx, cfg, tc.writes, child, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2})
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("PutStep = %v, want %v", err, tc.wantErr)
				}
				if got, err := s.Get(ctx, checkpoints.Config{ThreadID: "t", CheckpointID: child.ID}); err != nil || got != nil {
					t.Errorf("the rejected checkpoint was saved: %+v, %v", got, err)
				}
				if cfg.CheckpointID != "" {
					if parent, err := s.Get(ctx, cfg); err != nil || len(parent.PendingWrites) != 0 {
						t.Errorf("writes of a rejected step were saved: %v, %v", writesOf(parent), err)
					}
				}
			})
		}
	}
}

// TestPutStepAfterAnotherProcessDeletedTheThread: another process deletes
// the thread whose blobs this saver remembers. The step's first attempt
// references a deleted blob and is aborted whole; the retry saves the
// writes once and a checkpoint that reads back.
func TestPutStepAfterAnotherProcessDeletedTheThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	a, other := pgsaver.New(pool, nil), pgsaver.New(pool, nil)
	cfgs, _ := appendChain(t, a, "chat", 3, 100)
	if err := other.DeleteThread(ctx, "chat"); err != nil {
		t.Fatal(err)
	}
	// a still remembers the deleted head; the step carries its blob.
	child := stepCheckpoint(map[string]string{"step": "1"}, map[string]int64{"messages": 3, "other": 1, "step": 4})
	writes := []checkpoints.TaskWrites{{TaskID: "t1", Writes: []checkpoints.Write{{Channel: "step", Value: json.RawMessage("1")}}}}
	ccfg, err := a.PutStep(ctx, cfgs[2], writes, child, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"step": 4})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(ctx, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	// The messages blob is gone with the thread: the child has no value
	// for it, rather than a reference to a missing blob.
	if _, ok := got.Checkpoint.ChannelValues["messages"]; ok || string(got.Checkpoint.ChannelValues["step"]) != "1" {
		t.Errorf("child values = %v", got.Checkpoint.ChannelValues)
	}
	parentWrites, err := pool.Query(ctx, `SELECT task_id FROM checkpoint_writes WHERE thread_id = 'chat' AND checkpoint_id = $1`, cfgs[2].CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for parentWrites.Next() {
		n++
	}
	if parentWrites.Err() != nil || n != 1 {
		t.Errorf("%d writes saved against the parent, want 1 (%v)", n, parentWrites.Err())
	}
}

// TestPutStepOverSavedWrites: a step saved again over writes its tasks
// already saved (a resumed step) keeps the first regular writes and
// replaces the special ones, and still saves the checkpoint.
func TestPutStepOverSavedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, ss := range stepSavers {
		t.Run(ss.name, func(t *testing.T) {
			t.Parallel()
			s := ss.new(t)
			root := stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1})
			rcfg, err := s.Put(ctx, checkpoints.Config{ThreadID: "t"}, root, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutWrites(ctx, rcfg, []checkpoints.Write{{Channel: "n", Value: json.RawMessage("5")}}, "b", ""); err != nil {
				t.Fatal(err)
			}
			if err := s.PutWrites(ctx, rcfg, []checkpoints.Write{{Channel: checkpoints.ErrorChannel, Value: json.RawMessage(`"old"`)}}, "a", ""); err != nil {
				t.Fatal(err)
			}
			writes := []checkpoints.TaskWrites{
				{TaskID: "a", Writes: []checkpoints.Write{{Channel: checkpoints.ErrorChannel, Value: json.RawMessage(`"new"`)}}},
				{TaskID: "b", Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}},
			}
			child := stepCheckpoint(map[string]string{"n": "1"}, map[string]int64{"n": 2})
			ccfg, err := s.PutStep(ctx, rcfg, writes, child, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2})
			if err != nil {
				t.Fatal(err)
			}
			parent, err := s.Get(ctx, rcfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := writesOf(parent), []string{`a/__error__="new"`, "b/n=5"}; !slices.Equal(got, want) {
				t.Errorf("parent's writes = %v, want %v", got, want)
			}
			if got, err := s.Get(ctx, ccfg); err != nil || got == nil || string(got.Checkpoint.ChannelValues["n"]) != "1" {
				t.Errorf("child = %+v, %v", got, err)
			}
		})
	}
}

// TestStepWritesKeepTheirSemantics: the Postgres saver keeps a step's
// regular writes on the step's checkpoint row rather than as rows of their
// own; read back, they behave exactly as writes saved with PutWrites, as
// the memory saver keeps them: the first regular write of a task and idx
// wins over a later PutWrites and over a second step from the same parent,
// a special write saved later is added, and the parent's pending writes
// survive CopyThread and the deletion of the step's run.
func TestStepWritesKeepTheirSemantics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := func(v string) []checkpoints.Write {
		return []checkpoints.Write{{Channel: "n", Value: json.RawMessage(v)}}
	}
	for _, ss := range stepSavers {
		for _, ns := range []string{"", "inner:1"} {
			t.Run(ss.name+"/namespace="+ns, func(t *testing.T) {
				t.Parallel()
				s := ss.new(t)
				root, err := s.Put(ctx, checkpoints.Config{ThreadID: "t", Namespace: ns}, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
					checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1, RunID: "run-1"}, map[string]int64{"n": 1})
				if err != nil {
					t.Fatal(err)
				}
				step := func(writes []checkpoints.TaskWrites, v string) checkpoints.Config {
					t.Helper()
					cfg, err := s.PutStep(ctx, root, writes, stepCheckpoint(map[string]string{"n": v}, map[string]int64{"n": 2}),
						checkpoints.Metadata{Source: checkpoints.SourceLoop, RunID: "run-2"}, map[string]int64{"n": 2})
					if err != nil {
						t.Fatal(err)
					}
					return cfg
				}
				pending := func(thread string) []string {
					t.Helper()
					cfg := root
					cfg.ThreadID = thread
					tu, err := s.Get(ctx, cfg)
					if err != nil || tu == nil {
						t.Fatalf("get %s: %v, %v", thread, tu, err)
					}
					list, err := s.List(ctx, checkpoints.ListQuery{ThreadID: thread, Namespace: ns}, checkpoints.ListOptions{})
					if err != nil || len(list) == 0 {
						t.Fatalf("list %s: %v", thread, err)
					}
					if got, want := writesOf(list[len(list)-1]), writesOf(tu); !slices.Equal(got, want) {
						t.Errorf("List gives the root %v, Get %v", got, want)
					}
					return writesOf(tu)
				}

				child := step([]checkpoints.TaskWrites{{TaskID: "a", TaskPath: "~pull/a", Writes: n("1")}}, "1")
				if err := s.PutWrites(ctx, root, n("2"), "a", "~pull/a"); err != nil {
					t.Fatal(err)
				}
				step([]checkpoints.TaskWrites{{TaskID: "a", Writes: n("3")}, {TaskID: "b", Writes: n("4")}}, `"fork"`)
				if err := s.PutWrites(ctx, root, []checkpoints.Write{{Channel: checkpoints.ErrorChannel, Value: json.RawMessage(`"late"`)}}, "a", ""); err != nil {
					t.Fatal(err)
				}
				want := []string{`a/__error__="late"`, "a/n=1", "b/n=4"}
				if got := pending("t"); !slices.Equal(got, want) {
					t.Errorf("root's pending writes = %v, want %v", got, want)
				}
				if tu, err := s.Get(ctx, child); err != nil || tu == nil || len(tu.PendingWrites) != 0 {
					t.Errorf("the step's checkpoint = %+v, %v; want it without pending writes of its own", tu, err)
				}

				if err := s.CopyThread(ctx, "t", "copy"); err != nil {
					t.Fatal(err)
				}
				if got := pending("copy"); !slices.Equal(got, want) {
					t.Errorf("copied root's pending writes = %v, want %v", got, want)
				}

				// Prune keeps the copy's latest checkpoint, a step's: it
				// has no pending writes, and its parent's are gone with it.
				if err := s.Prune(ctx, []string{"copy"}, checkpoints.KeepLatest); err != nil {
					t.Fatal(err)
				}
				list, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "copy", Namespace: ns}, checkpoints.ListOptions{})
				if err != nil || len(list) != 1 || len(list[0].PendingWrites) != 0 || list[0].Checkpoint.ChannelValues["n"] == nil {
					t.Errorf("copy after Prune = %+v, %v; want its latest checkpoint alone, without pending writes", list, err)
				}

				if err := s.DeleteForRuns(ctx, []string{"run-2"}); err != nil {
					t.Fatal(err)
				}
				if tu, err := s.Get(ctx, child); err != nil || tu != nil {
					t.Fatalf("the step's checkpoint after deleting its run = %+v, %v; want none", tu, err)
				}
				if got := pending("t"); !slices.Equal(got, want) {
					t.Errorf("root's pending writes after deleting the steps' run = %v, want %v", got, want)
				}

			})
		}
	}
}

// TestDowngradeKeepsCarriedWrites: rolling back the migration that lets a
// checkpoint carry its step's writes turns them into rows of
// checkpoint_writes, so the parent keeps its pending writes.
func TestDowngradeKeepsCarriedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := pgsaver.New(pool, nil)
	root, err := s.Put(ctx, checkpoints.Config{ThreadID: "t"}, stepCheckpoint(map[string]string{"n": "0"}, map[string]int64{"n": 1}),
		checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	writes := []checkpoints.TaskWrites{{TaskID: "a", TaskPath: "~pull/a", Writes: []checkpoints.Write{
		{Channel: "n", Value: json.RawMessage("1")}, {Channel: "doc", Value: json.RawMessage(`{"k":"v"}`)}}}}
	if _, err := s.PutStep(ctx, root, writes, stepCheckpoint(map[string]string{"n": "1"}, map[string]int64{"n": 2}),
		checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 2}); err != nil {
		t.Fatal(err)
	}
	var before int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM checkpoint_writes`).Scan(&before); err != nil || before != 0 {
		t.Fatalf("%d rows of checkpoint_writes before the downgrade (%v), want the writes carried", before, err)
	}
	files, err := fs.Glob(migrations.FS(), "*_step_writes.sql")
	if err != nil || len(files) != 1 {
		t.Fatalf("the step writes migration: %v, %v", files, err)
	}
	version, err := strconv.Atoi(strings.SplitN(files[0], "_", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := migrations.To(ctx, pool, int32(version-1)); err != nil {
		t.Fatal(err)
	}
	got := queryStrings(t, pool, `SELECT format('%s %s %s %s %s', checkpoint_id, task_id, idx, channel, convert_from(value, 'UTF8')::jsonb)
		FROM checkpoint_writes ORDER BY task_id, idx`)
	if want := []string{root.CheckpointID + ` a 0 n 1`, root.CheckpointID + ` a 1 doc {"k": "v"}`}; !slices.Equal(got, want) {
		t.Errorf("rows of checkpoint_writes after the downgrade = %q; want %q", got, want)
	}
}

// TestCarriedWritesStayWithTheirParent: a step's writes belong to the
// checkpoint the step ran from, however the saver stores them. Deleting a
// later run whose step wrote the same task and idx as an earlier one
// keeps the earlier write (the first saved), and saving a checkpoint again
// under another parent leaves its step's writes with the parent they were
// written against, as the memory saver does.
func TestCarriedWritesStayWithTheirParent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := func(task, v string) checkpoints.TaskWrites {
		return checkpoints.TaskWrites{TaskID: task, Writes: []checkpoints.Write{{Channel: "n", Value: json.RawMessage(v)}}}
	}
	for _, ss := range stepSavers {
		t.Run(ss.name, func(t *testing.T) {
			t.Parallel()
			s := ss.new(t)
			put := func(parent checkpoints.Config, cp *checkpoints.Checkpoint, run string, writes ...checkpoints.TaskWrites) checkpoints.Config {
				t.Helper()
				cfg, err := s.PutStep(ctx, parent, writes, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, RunID: run}, map[string]int64{"n": 2})
				if err != nil {
					t.Fatal(err)
				}
				return cfg
			}
			pending := func(cfg checkpoints.Config) []string {
				t.Helper()
				tu, err := s.Get(ctx, cfg)
				if err != nil || tu == nil {
					t.Fatalf("get %v: %v, %v", cfg, tu, err)
				}
				return writesOf(tu)
			}
			cp := func(v string) *checkpoints.Checkpoint {
				return stepCheckpoint(map[string]string{"n": v}, map[string]int64{"n": 2})
			}
			root := put(checkpoints.Config{ThreadID: "t"}, cp("0"), "run-1")

			// Two runs from root replay task a; the second also runs b,
			// whose value must keep its bytes (key order, spacing).
			put(root, cp("1"), "run-2", n("a", "1"))
			put(root, cp("5"), "run-3", n("a", "5"), n("b", `{"z": 1,  "a": [2]}`))
			want := []string{"a/n=1", `b/n={"z": 1,  "a": [2]}`}
			if got := pending(root); !slices.Equal(got, want) {
				t.Fatalf("root's pending writes = %v, want %v", got, want)
			}
			if err := s.DeleteForRuns(ctx, []string{"run-3"}); err != nil {
				t.Fatal(err)
			}
			if got := pending(root); !slices.Equal(got, want) {
				t.Errorf("root's pending writes after deleting the later run = %v, want %v", got, want)
			}

			// A step from root, then its checkpoint saved again with
			// another parent: its writes stay root's. Saved again with
			// its value unchanged under a parent the saver does not hold,
			// it is an upsert that resolves the value on the server; with
			// a new version, a plain insert refused by the primary key,
			// then an upsert. Task d's write was carried first by an
			// earlier step, which keeps it.
			put(root, cp("6"), "run-4", n("d", "1"))
			other := put(root, cp("7"), "run-4")
			for i, how := range []string{"its value resolved on the server", "a new version"} {
				task := fmt.Sprintf("c%d", i)
				moved := cp("8")
				child := put(root, moved, "run-5", n(task, "8"), n("d", "2"))
				want = append(want, task+"/n=8")
				if i == 0 {
					want = append(want, "d/n=1")
				}
				slices.Sort(want)
				if got := pending(root); !slices.Equal(got, want) {
					t.Fatalf("%s: root's pending writes = %v, want %v", how, got, want)
				}
				parent, versions := other, map[string]int64{}
				if i == 1 {
					parent, versions = put(root, cp("9"), "run-6"), map[string]int64{"n": 2}
				}
				again := *moved
				again.TS = again.TS.Add(time.Second)
				if _, err := s.Put(ctx, parent, &again, checkpoints.Metadata{Source: checkpoints.SourceUpdate, RunID: "run-5"}, versions); err != nil {
					t.Fatal(err)
				}
				tu, err := s.Get(ctx, child)
				if err != nil || tu == nil || tu.ParentConfig == nil || tu.ParentConfig.CheckpointID != parent.CheckpointID {
					t.Fatalf("%s: the checkpoint saved again = %+v, %v; want it under %s", how, tu, err, parent.CheckpointID)
				}
				if got := pending(root); !slices.Equal(got, want) {
					t.Errorf("%s: root's pending writes after its child moved = %v, want %v", how, got, want)
				}
				if got := pending(parent); len(got) != 0 {
					t.Errorf("%s: the new parent's pending writes = %v, want none", how, got)
				}
			}
		})
	}
}

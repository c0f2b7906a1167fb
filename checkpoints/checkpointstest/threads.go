package checkpointstest

import (
	"errors"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

// putThread saves a small thread in both namespaces: three checkpoints per
// namespace, each with a write, the middle ones from run-2 and the others
// from run-1. It returns every saved tuple, by namespace, oldest first.
func putThread(t *testing.T, s checkpoints.Saver, thread string) map[string][]*checkpoints.Tuple {
	t.Helper()
	out := map[string][]*checkpoints.Tuple{}
	for _, ns := range namespaces {
		cfg := checkpoints.Config{ThreadID: thread, Namespace: ns}
		for i, run := range []string{"run-1", "run-2", "run-1"} {
			cp := newCheckpoint(t, map[string]any{"n": i, "list": []int{0, i}}, map[string]int64{"n": int64(i + 1), "list": int64(i + 1)})
			cfg = mustPut(t, s, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: run}, map[string]int64{"n": int64(i + 1), "list": int64(i + 1)})
			mustWrite(t, s, cfg, "task", write(t, "n", i), write(t, checkpoints.ErrorChannel, "err"))
			out[ns] = append(out[ns], mustGet(t, s, cfg))
		}
	}
	return out
}

func listAll(t *testing.T, s checkpoints.Saver, thread string) []*checkpoints.Tuple {
	t.Helper()
	return mustList(t, s, checkpoints.ListQuery{ThreadID: thread, AllNamespaces: true}, checkpoints.ListOptions{})
}

func init() {
	register("Y08_CopyThread", func(t *testing.T, s checkpoints.Saver) {
		src := putThread(t, s, "src")
		before := listAll(t, s, "src")
		if err := s.CopyThread(ctx(), "src", "dst"); err != nil {
			t.Fatal(err)
		}
		after := listAll(t, s, "src")
		copied := listAll(t, s, "dst")
		if !slices.Equal(ids(copied), ids(before)) {
			t.Fatalf("copy has ids %v, want the source's %v in the same order", ids(copied), ids(before))
		}
		for i := range before {
			expectTuple(t, "source after copy", after[i], before[i])
			want := *before[i]
			want.Config.ThreadID = "dst"
			if want.ParentConfig != nil {
				p := *want.ParentConfig
				p.ThreadID = "dst"
				want.ParentConfig = &p
			}
			expectTuple(t, "copy", copied[i], &want)
		}
		for _, ns := range namespaces {
			latest := mustGet(t, s, checkpoints.Config{ThreadID: "dst", Namespace: ns})
			if latest.Config.CheckpointID != src[ns][2].Config.CheckpointID {
				t.Errorf("ns %q: the copy's latest is %s, want %s", ns, latest.Config.CheckpointID, src[ns][2].Config.CheckpointID)
			}
		}
		// The copy lives on its own: new checkpoints go after the copied ones.
		next := mustPut(t, s, checkpoints.Config{ThreadID: "dst", CheckpointID: src[""][2].Config.CheckpointID}, newCheckpoint(t, nil, map[string]int64{"n": 3, "list": 3}), checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 3}, nil)
		got := mustGet(t, s, checkpoints.Config{ThreadID: "dst"})
		if got.Config != next || string(got.Checkpoint.ChannelValues["list"]) != "[0,2]" {
			t.Errorf("after a put, dst latest = %+v with %s", got.Config, got.Checkpoint.ChannelValues["list"])
		}
		if len(listAll(t, s, "src")) != len(before) {
			t.Errorf("a put to the copy changed the source")
		}
		if err := s.DeleteThread(ctx(), "src"); err != nil {
			t.Fatal(err)
		}
		if got := listAll(t, s, "dst"); len(got) != len(before)+1 || string(got[1].Checkpoint.ChannelValues["list"]) != "[0,2]" {
			t.Errorf("deleting the source broke the copy: %d tuples", len(got))
		}
	})

	register("Y08_CopyThreadEdgeCases", func(t *testing.T, s checkpoints.Saver) {
		putThread(t, s, "src")
		putThread(t, s, "taken")
		if err := s.CopyThread(ctx(), "no-such-thread", "dst"); err != nil {
			t.Fatal(err)
		}
		if got := listAll(t, s, "dst"); len(got) != 0 {
			t.Errorf("copying a missing thread left %d checkpoints", len(got))
		}
		if err := s.CopyThread(ctx(), "src", "taken"); !errors.Is(err, checkpoints.ErrThreadExists) {
			t.Errorf("copy onto a thread with checkpoints: %v, want ErrThreadExists", err)
		}
		for _, pair := range [][2]string{{"src", "src"}, {"", "x"}, {"src", ""}} {
			if err := s.CopyThread(ctx(), pair[0], pair[1]); !errors.Is(err, checkpoints.ErrInvalidConfig) {
				t.Errorf("CopyThread(%q, %q) = %v, want ErrInvalidConfig", pair[0], pair[1], err)
			}
		}
	})

	register("Y09_DeleteForRuns", func(t *testing.T, s checkpoints.Saver) {
		a := putThread(t, s, "a")
		putThread(t, s, "b")
		if err := s.DeleteForRuns(ctx(), nil); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteForRuns(ctx(), []string{"no-such-run"}); err != nil {
			t.Fatal(err)
		}
		if n := len(listAll(t, s, "a")) + len(listAll(t, s, "b")); n != 12 {
			t.Fatalf("no-op deletes removed checkpoints: %d left of 12", n)
		}
		if err := s.DeleteForRuns(ctx(), []string{"run-2"}); err != nil {
			t.Fatal(err)
		}
		for _, th := range []string{"a", "b"} {
			for _, tu := range listAll(t, s, th) {
				if tu.Metadata.RunID != "run-1" {
					t.Errorf("thread %s: checkpoint of %s survived", th, tu.Metadata.RunID)
				}
			}
			if n := len(listAll(t, s, th)); n != 4 {
				t.Errorf("thread %s: %d checkpoints left, want 4", th, n)
			}
		}
		for _, ns := range namespaces {
			// The survivors keep their values and writes.
			expectTuple(t, "survivor", mustGet(t, s, a[ns][2].Config), a[ns][2])
			if got := mustGet(t, s, a[ns][1].Config); got != nil {
				t.Errorf("deleted checkpoint still readable")
			}
		}
	})

	register("Y10_PruneKeepLatest", func(t *testing.T, s checkpoints.Saver) {
		a := putThread(t, s, "a")
		b := putThread(t, s, "b")
		if err := s.Prune(ctx(), []string{"a", "no-such-thread"}, checkpoints.KeepLatest); err != nil {
			t.Fatal(err)
		}
		for _, ns := range namespaces {
			got := mustList(t, s, checkpoints.ListQuery{ThreadID: "a", Namespace: ns}, checkpoints.ListOptions{})
			if len(got) != 1 {
				t.Fatalf("ns %q: %d checkpoints after prune, want 1", ns, len(got))
			}
			expectTuple(t, "kept", got[0], a[ns][2])
			if got := mustGet(t, s, a[ns][0].Config); got != nil {
				t.Errorf("pruned checkpoint still readable")
			}
		}
		if got := listAll(t, s, "b"); len(got) != 6 {
			t.Errorf("prune of a touched b: %d left", len(got))
		}
		expectTuple(t, "other thread", mustGet(t, s, b[""][0].Config), b[""][0])
		// The pruned thread goes on from its latest checkpoint.
		next := newCheckpoint(t, map[string]any{"n": 9}, map[string]int64{"n": 9, "list": 3})
		cfg := mustPut(t, s, a[""][2].Config, next, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"n": 9})
		if got := mustGet(t, s, cfg); string(got.Checkpoint.ChannelValues["list"]) != "[0,2]" || string(got.Checkpoint.ChannelValues["n"]) != "9" {
			t.Errorf("after prune, a new checkpoint reads %s", showValues(got.Checkpoint.ChannelValues))
		}
	})

	register("Y10_PruneDeleteAll", func(t *testing.T, s checkpoints.Saver) {
		putThread(t, s, "a")
		putThread(t, s, "b")
		if err := s.Prune(ctx(), []string{"a"}, checkpoints.DeleteAll); err != nil {
			t.Fatal(err)
		}
		if got := listAll(t, s, "a"); len(got) != 0 {
			t.Errorf("%d checkpoints left", len(got))
		}
		if got := listAll(t, s, "b"); len(got) != 6 {
			t.Errorf("other thread: %d left, want 6", len(got))
		}
		if err := s.Prune(ctx(), []string{"a"}, checkpoints.PruneStrategy(99)); !errors.Is(err, checkpoints.ErrInvalidConfig) {
			t.Errorf("unknown strategy: %v, want ErrInvalidConfig", err)
		}
	})
}

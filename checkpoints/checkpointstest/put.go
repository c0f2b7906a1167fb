package checkpointstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

func init() {
	register("01-08_PutRoundTrip", func(t *testing.T, s checkpoints.Saver) {
		for _, ns := range namespaces {
			cfg := checkpoints.Config{ThreadID: "thread-1", Namespace: ns}
			cp := newCheckpoint(t, map[string]any{"animals": []string{"dog"}}, map[string]int64{"animals": 1})
			md := checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1, Parents: map[string]string{}}
			got := mustPut(t, s, cfg, cp, md, map[string]int64{"animals": 1})
			// Cases 1-5: exactly the thread, namespace and the checkpoint's own id.
			if want := (checkpoints.Config{ThreadID: "thread-1", Namespace: ns, CheckpointID: cp.ID}); got != want {
				t.Fatalf("ns %q: Put returned %+v, want %+v", ns, got, want)
			}
			// Cases 6-8: the tuple reads back unaltered.
			expectTuple(t, "ns "+ns, mustGet(t, s, got), stored(cfg, cp, md, cp.ChannelValues))
		}
	})

	register("09-10_PutWithoutThreadFails", func(t *testing.T, s checkpoints.Saver) {
		for _, cfg := range []checkpoints.Config{{}, {Namespace: "child"}} {
			cp := newCheckpoint(t, nil, nil)
			_, err := s.Put(ctx(), cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceInput}, nil)
			if !errors.Is(err, checkpoints.ErrInvalidConfig) {
				t.Fatalf("Put(%+v) = %v, want ErrInvalidConfig", cfg, err)
			}
		}
		if got := mustList(t, s, checkpoints.ListQuery{AllNamespaces: true}, checkpoints.ListOptions{}); len(got) != 0 {
			t.Fatalf("a rejected put left %d checkpoints", len(got))
		}
	})

	register("09_PutWithoutCheckpointIDFails", func(t *testing.T, s checkpoints.Saver) {
		cp := newCheckpoint(t, nil, nil)
		cp.ID = ""
		if _, err := s.Put(ctx(), checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, nil); !errors.Is(err, checkpoints.ErrInvalidConfig) {
			t.Fatalf("Put of a checkpoint without id = %v, want ErrInvalidConfig", err)
		}
		if _, err := s.Put(ctx(), checkpoints.Config{ThreadID: "t"}, nil, checkpoints.Metadata{}, nil); !errors.Is(err, checkpoints.ErrInvalidConfig) {
			t.Fatalf("Put of a nil checkpoint = %v, want ErrInvalidConfig", err)
		}
	})

	register("11_PutDefaultsToRootNamespace", func(t *testing.T, s checkpoints.Saver) {
		cp := newCheckpoint(t, nil, nil)
		got := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, nil)
		if got.Namespace != "" || mustGet(t, s, checkpoints.Config{ThreadID: "t", Namespace: ""}) == nil {
			t.Fatalf("Put without namespace returned %+v; want the root namespace", got)
		}
	})

	register("12_PutStoresOnlyNewVersions", func(t *testing.T, s checkpoints.Saver) {
		cfg := checkpoints.Config{ThreadID: "t"}
		var want []map[string]json.RawMessage
		var cps []*checkpoints.Checkpoint
		for _, nv := range []map[string]int64{{}, {"foo": 1}, {"foo": 1, "baz": 1}} {
			cp := newCheckpoint(t, map[string]any{"foo": "bar", "baz": "qux"}, map[string]int64{"foo": 1, "baz": 1})
			mustPut(t, s, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, nv)
			w := map[string]json.RawMessage{}
			for ch := range nv {
				w[ch] = cp.ChannelValues[ch]
			}
			want = append(want, w)
			cps = append(cps, cp)
		}
		// Read back after all puts: a checkpoint keeps the values it had
		// when it was saved.
		for i, cp := range cps {
			got := mustGet(t, s, checkpoints.Config{ThreadID: "t", CheckpointID: cp.ID})
			if !equalValues(got.Checkpoint.ChannelValues, want[i]) {
				t.Errorf("put %d: values = %s, want %s", i, showValues(got.Checkpoint.ChannelValues), showValues(want[i]))
			}
		}
	})

	register("13_PutWritesRoundTrip", func(t *testing.T, s checkpoints.Saver) {
		for _, ns := range namespaces {
			cfg := checkpoints.Config{ThreadID: "t", Namespace: ns}
			cp := newCheckpoint(t, map[string]any{"animals": []string{"cat"}}, map[string]int64{"animals": 1})
			md := checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}
			got := mustPut(t, s, cfg, cp, md, map[string]int64{"animals": 1})
			mustWrite(t, s, got, "pet_task", write(t, "animals", "dog"))
			expectTuple(t, "ns "+ns, mustGet(t, s, got), stored(cfg, cp, md, cp.ChannelValues, pending(t, "pet_task", "animals", "dog")))
		}
	})

	register("14-15_PutWritesNeedsThreadAndCheckpoint", func(t *testing.T, s checkpoints.Saver) {
		for _, cfg := range []checkpoints.Config{{CheckpointID: checkpoints.NewID()}, {ThreadID: "t"}, {}} {
			err := s.PutWrites(ctx(), cfg, []checkpoints.Write{write(t, "a", 1)}, "task", "")
			if !errors.Is(err, checkpoints.ErrInvalidConfig) {
				t.Errorf("PutWrites(%+v) = %v, want ErrInvalidConfig", cfg, err)
			}
		}
	})

	register("16-32_GetTuple", func(t *testing.T, s checkpoints.Saver) {
		for _, ns := range namespaces {
			p, c := putLineage(t, s, "thread-1", ns)
			expectTuple(t, "parent by id", mustGet(t, s, p.Config), p)
			expectTuple(t, "child by id", mustGet(t, s, c.Config), c)
			expectTuple(t, "latest", mustGet(t, s, checkpoints.Config{ThreadID: "thread-1", Namespace: ns}), c)
			for _, cfg := range []checkpoints.Config{
				{ThreadID: "no-such-thread", Namespace: ns, CheckpointID: checkpoints.NewID()},
				{ThreadID: "no-such-thread", Namespace: ns},
				{ThreadID: "thread-1", Namespace: ns, CheckpointID: checkpoints.NewID()},
				{ThreadID: "thread-1", Namespace: "no-such-namespace"},
				{Namespace: ns, CheckpointID: p.Config.CheckpointID}, // case 32: no thread is not an error
			} {
				if got := mustGet(t, s, cfg); got != nil {
					t.Errorf("Get(%+v) = %+v, want nil", cfg, got.Config)
				}
			}
		}
	})

	register("33-34_CarryOverChannels", func(t *testing.T, s checkpoints.Saver) {
		for _, ns := range namespaces {
			cfg := checkpoints.Config{ThreadID: "t", Namespace: ns}
			p := newCheckpoint(t, map[string]any{"messages": []string{"hi"}, "stepCount": 1}, map[string]int64{"messages": 1, "stepCount": 1})
			pcfg := mustPut(t, s, cfg, p, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"messages": 1, "stepCount": 1})
			// The engine passes only the values that changed.
			c := newCheckpoint(t, map[string]any{"stepCount": 3}, map[string]int64{"messages": 1, "stepCount": 2})
			ccfg := mustPut(t, s, pcfg, c, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"stepCount": 2})
			want := map[string]json.RawMessage{"messages": raw(t, []string{"hi"}), "stepCount": raw(t, 3)}
			for _, cfg := range []checkpoints.Config{ccfg, cfg} {
				if got := mustGet(t, s, cfg).Checkpoint.ChannelValues; !equalValues(got, want) {
					t.Errorf("ns %q: Get(%+v) values = %s, want %s", ns, cfg, showValues(got), showValues(want))
				}
			}
		}
	})

	register("39_DeleteThread", func(t *testing.T, s checkpoints.Saver) {
		for _, th := range []string{"1", "2"} {
			for _, ns := range namespaces {
				c := mustPut(t, s, checkpoints.Config{ThreadID: th, Namespace: ns}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceInput}, nil)
				mustWrite(t, s, c, "task", write(t, "a", 1), write(t, checkpoints.ErrorChannel, "boom"))
			}
		}
		if err := s.DeleteThread(ctx(), "1"); err != nil {
			t.Fatal(err)
		}
		for _, ns := range namespaces {
			if got := mustGet(t, s, checkpoints.Config{ThreadID: "1", Namespace: ns}); got != nil {
				t.Errorf("Y7: thread 1 ns %q survived delete", ns)
			}
			if got := mustGet(t, s, checkpoints.Config{ThreadID: "2", Namespace: ns}); got == nil || len(got.PendingWrites) != 2 {
				t.Errorf("thread 2 ns %q was touched by deleting thread 1: %+v", ns, got)
			}
		}
		// Y7: a missing thread is a no-op; its writes went too.
		if err := s.DeleteThread(ctx(), "no-such-thread"); err != nil {
			t.Errorf("DeleteThread(missing) = %v", err)
		}
		if err := s.DeleteThread(ctx(), ""); !errors.Is(err, checkpoints.ErrInvalidConfig) {
			t.Errorf("DeleteThread(\"\") = %v, want ErrInvalidConfig", err)
		}
	})

	register("Y01_PutWritesIsIdempotent", func(t *testing.T, s checkpoints.Saver) {
		c := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
		mustWrite(t, s, c, "task", write(t, "a", 1), write(t, "b", 2))
		// A re-run task saves again: the first writes stay.
		mustWrite(t, s, c, "task", write(t, "a", 10), write(t, "b", 20))
		want := []checkpoints.PendingWrite{pending(t, "task", "a", 1), pending(t, "task", "b", 2)}
		expectWrites(t, mustGet(t, s, c), want)
	})

	register("Y02_SpecialWritesAreUpserted", func(t *testing.T, s checkpoints.Saver) {
		c := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
		mustWrite(t, s, c, "task", write(t, checkpoints.ErrorChannel, "first error"))
		mustWrite(t, s, c, "task", write(t, checkpoints.ErrorChannel, "second error"))
		mustWrite(t, s, c, "task", write(t, checkpoints.InterruptChannel, map[string]any{"value": "approve?", "id": "i1"}))
		mustWrite(t, s, c, "task", write(t, "out", 1), write(t, checkpoints.ResumeChannel, "yes"))
		mustWrite(t, s, c, "task", write(t, "out", 2), write(t, checkpoints.ResumeChannel, "no"))
		// Ordered by task then index: resume (-4), interrupt (-3), error (-1), then regular writes.
		want := []checkpoints.PendingWrite{
			pending(t, "task", checkpoints.ResumeChannel, "no"),
			pending(t, "task", checkpoints.InterruptChannel, map[string]any{"value": "approve?", "id": "i1"}),
			pending(t, "task", checkpoints.ErrorChannel, "second error"),
			pending(t, "task", "out", 1),
		}
		expectWrites(t, mustGet(t, s, c), want)
	})

	register("Y03_WritesAreIsolated", func(t *testing.T, s checkpoints.Saver) {
		var cfgs []checkpoints.Config
		for _, ns := range namespaces {
			c := mustPut(t, s, checkpoints.Config{ThreadID: "t", Namespace: ns}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
			cfgs = append(cfgs, c)
			if got := mustGet(t, s, c); len(got.PendingWrites) != 0 {
				t.Fatalf("a new checkpoint has writes: %s", showWrites(got.PendingWrites))
			}
			if err := s.PutWrites(ctx(), c, []checkpoints.Write{write(t, "x", ns+"-b")}, "task-b", "~pull/node"); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, s, c, "task-a", write(t, "x", ns+"-a"), write(t, "y", ns+"-a2"))
		}
		next := mustPut(t, s, cfgs[0], newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, nil)
		for i, ns := range namespaces {
			expectWrites(t, mustGet(t, s, cfgs[i]), []checkpoints.PendingWrite{
				pending(t, "task-a", "x", ns+"-a"), pending(t, "task-a", "y", ns+"-a2"), pending(t, "task-b", "x", ns+"-b"),
			})
		}
		expectWrites(t, mustGet(t, s, next), nil)
	})

	register("Y05_ValueVersioning", func(t *testing.T, s checkpoints.Saver) {
		cfg := checkpoints.Config{ThreadID: "t"}
		c1 := newCheckpoint(t, map[string]any{"a": "a1", "b": "b1"}, map[string]int64{"a": 1, "b": 1})
		cfg1 := mustPut(t, s, cfg, c1, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"a": 1, "b": 1})
		c2 := newCheckpoint(t, map[string]any{"a": "a2"}, map[string]int64{"a": 2, "b": 1})
		cfg2 := mustPut(t, s, cfg1, c2, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"a": 2})
		// A channel added later, and b dropped from the versions.
		c3 := newCheckpoint(t, map[string]any{"c": "c3"}, map[string]int64{"a": 2, "c": 3})
		cfg3 := mustPut(t, s, cfg2, c3, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"c": 3})
		for _, tc := range []struct {
			cfg  checkpoints.Config
			want map[string]any
		}{
			{cfg1, map[string]any{"a": "a1", "b": "b1"}},
			{cfg2, map[string]any{"a": "a2", "b": "b1"}},
			{cfg3, map[string]any{"a": "a2", "c": "c3"}},
		} {
			want := map[string]json.RawMessage{}
			for k, v := range tc.want {
				want[k] = raw(t, v)
			}
			if got := mustGet(t, s, tc.cfg).Checkpoint.ChannelValues; !equalValues(got, want) {
				t.Errorf("%s: values = %s, want %s", tc.cfg.CheckpointID, showValues(got), showValues(want))
			}
		}
	})

	register("Y05_ForksWithTheSameVersionKeepTheirOwnValues", func(t *testing.T, s checkpoints.Saver) {
		// Two branches from one parent give channel x the same version
		// number with different values; each branch, and each branch's
		// child that leaves x unchanged, must read its own value.
		root := newCheckpoint(t, map[string]any{"x": "root"}, map[string]int64{"x": 1})
		rcfg := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, root, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"x": 1})
		for _, branch := range []string{"left", "right"} {
			b := newCheckpoint(t, map[string]any{"x": branch}, map[string]int64{"x": 2})
			bcfg := mustPut(t, s, rcfg, b, checkpoints.Metadata{Source: checkpoints.SourceUpdate}, map[string]int64{"x": 2})
			child := newCheckpoint(t, map[string]any{"y": 1}, map[string]int64{"x": 2, "y": 3})
			ccfg := mustPut(t, s, bcfg, child, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"y": 3})
			for _, cfg := range []checkpoints.Config{bcfg, ccfg} {
				if got := string(mustGet(t, s, cfg).Checkpoint.ChannelValues["x"]); got != fmt.Sprintf("%q", branch) {
					t.Errorf("branch %s: x = %s", branch, got)
				}
			}
		}
	})

	register("Y05_ForkCopyFindsValuesByVersion", func(t *testing.T, s checkpoints.Saver) {
		// A "__copy__" fork: the parent is the copied checkpoint's parent
		// and no new versions; values come from the copied checkpoint.
		p := newCheckpoint(t, map[string]any{"x": 1}, map[string]int64{"x": 1})
		pcfg := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, p, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"x": 1})
		c := newCheckpoint(t, map[string]any{"x": 2}, map[string]int64{"x": 2})
		mustPut(t, s, pcfg, c, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"x": 2})
		f := newCheckpoint(t, nil, map[string]int64{"x": 2})
		fcfg := mustPut(t, s, pcfg, f, checkpoints.Metadata{Source: checkpoints.SourceFork, Step: 1}, nil)
		if got := string(mustGet(t, s, fcfg).Checkpoint.ChannelValues["x"]); got != "2" {
			t.Fatalf("fork reads x = %q, want 2", got)
		}
	})

	register("Y05_AppendedListsReadBackAtEveryStep", func(t *testing.T, s checkpoints.Saver) {
		// The shape that makes storage quadratic upstream: a list channel
		// that grows every step. Every checkpoint must keep its own list,
		// including after the list is replaced, shrunk or forked.
		cfg := checkpoints.Config{ThreadID: "t"}
		var msgs []string
		type step struct {
			cfg  checkpoints.Config
			want []string
		}
		var steps []step
		for i := range 40 {
			switch i {
			case 17:
				msgs = []string{"reset"}
			case 29:
				msgs = msgs[:3]
			default:
				msgs = append(msgs, fmt.Sprintf("message %d, with \"quotes\", commas, [brackets] and ünïcode", i))
			}
			cp := newCheckpoint(t, map[string]any{"messages": msgs, "n": i}, map[string]int64{"messages": int64(i + 1), "n": int64(i + 1)})
			cfg = mustPut(t, s, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}, map[string]int64{"messages": int64(i + 1), "n": int64(i + 1)})
			steps = append(steps, step{cfg, slices.Clone(msgs)})
		}
		// A fork from step 10 that appends something else.
		fork := append(slices.Clone(steps[10].want), "forked")
		fcp := newCheckpoint(t, map[string]any{"messages": fork}, map[string]int64{"messages": 12, "n": 11})
		fcfg := mustPut(t, s, steps[10].cfg, fcp, checkpoints.Metadata{Source: checkpoints.SourceUpdate, Step: 11}, map[string]int64{"messages": 12})
		steps = append(steps, step{fcfg, fork})
		empty := newCheckpoint(t, map[string]any{"messages": []string{}}, map[string]int64{"messages": 100})
		ecfg := mustPut(t, s, cfg, empty, checkpoints.Metadata{Source: checkpoints.SourceUpdate}, map[string]int64{"messages": 100})
		steps = append(steps, step{ecfg, []string{}})
		again := newCheckpoint(t, map[string]any{"messages": []string{"after empty"}}, map[string]int64{"messages": 101})
		acfg := mustPut(t, s, ecfg, again, checkpoints.Metadata{Source: checkpoints.SourceLoop}, map[string]int64{"messages": 101})
		steps = append(steps, step{acfg, []string{"after empty"}})
		for i, st := range steps {
			got := mustGet(t, s, st.cfg).Checkpoint.ChannelValues["messages"]
			if want := raw(t, st.want); string(got) != string(want) {
				t.Errorf("step %d: messages = %s, want %s", i, got, want)
			}
		}
	})

	register("Y06_VersionsAndMetadataRoundTrip", func(t *testing.T, s checkpoints.Saver) {
		cp := newCheckpoint(t, map[string]any{"a": 1}, map[string]int64{"a": 7, "branch:to:node": 1 << 40})
		cp.VersionsSeen = map[string]map[string]int64{
			"__input__":     {},
			"node":          {"a": 7, "branch:to:node": 1 << 40},
			"__interrupt__": {"a": 6},
		}
		cp.UpdatedChannels = []string{"a", "branch:to:node"}
		md := checkpoints.Metadata{
			Source:  checkpoints.SourceLoop,
			Step:    4,
			Parents: map[string]string{"": "parent-id"},
			RunID:   "run-1",
			Extra:   map[string]any{"score": 42.5, "tags": []any{"a", "b"}, "user": map[string]any{"name": "ann", "admin": true}, "none": nil},
		}
		cfg := checkpoints.Config{ThreadID: "t", Namespace: "node:abc|sub:def"}
		got := mustPut(t, s, cfg, cp, md, map[string]int64{"a": 7})
		expectTuple(t, "round trip", mustGet(t, s, got), stored(cfg, cp, md, cp.ChannelValues))
	})

	// Next is kept as put, through Put, PutStep and PutFrame, and read back
	// by Get and by every listing, Headers included: nil (unknown) stays
	// nil, an empty list (nothing to run) stays empty, a node named twice
	// (two Sends) stays twice; changing what was put or got changes
	// nothing stored.
	register("NextRoundTripsAsPlanned", func(t *testing.T, s checkpoints.Saver) {
		nexts := [][]string{nil, {}, {"tools", "tools", "agent"}, {"odd \"name\" <é>"}}
		cfg := checkpoints.Config{ThreadID: "t"}
		var want [][]string
		put := func(next []string, how string) {
			t.Helper()
			cp := newCheckpoint(t, map[string]any{"a": len(want)}, map[string]int64{"a": int64(len(want) + 1)})
			cp.Next = slices.Clone(next)
			md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: len(want)}
			nv := map[string]int64{"a": int64(len(want) + 1)}
			var err error
			switch how {
			case "step":
				cfg, err = s.(checkpoints.StepSaver).PutStep(ctx(), cfg, nil, cp, md, nv)
			case "frame":
				f := &checkpoints.Frame{ID: cp.ID, TS: cp.TS, Channels: []string{"a"}, Versions: []int64{nv["a"]},
					New: []checkpoints.FrameValue{{Index: 0, Value: cp.ChannelValues["a"]}}, UpdatedChannels: []string{}, Next: cp.Next}
				cfg, err = s.(checkpoints.FrameSaver).PutFrame(ctx(), cfg, nil, f, md)
			default:
				cfg, err = s.Put(ctx(), cfg, cp, md, nv)
			}
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			if cp.Next != nil && how == "put" {
				// Put's caller keeps its slice (PutStep and PutFrame
				// take theirs over) and may reuse it.
				cp.Next = append(cp.Next[:0], "changed")
			}
			want = append(want, next)
		}
		hows := []string{"put"}
		if _, ok := s.(checkpoints.StepSaver); ok {
			hows = append(hows, "step")
		}
		if _, ok := s.(checkpoints.FrameSaver); ok {
			hows = append(hows, "frame")
		}
		for _, how := range hows {
			for _, next := range nexts {
				put(next, how)
			}
		}
		same := func(what string, got, want []string) {
			t.Helper()
			if !slices.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("%s: next = %#v, want %#v", what, got, want)
			}
		}
		for _, opts := range []checkpoints.ListOptions{{}, {MetadataOnly: true}, {Headers: true}} {
			page := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, opts)
			if len(page) != len(want) {
				t.Fatalf("%+v: %d checkpoints, want %d", opts, len(page), len(want))
			}
			for i, tu := range page {
				same(fmt.Sprintf("list %+v, checkpoint %d", opts, len(want)-1-i), tu.Checkpoint.Next, want[len(want)-1-i])
				if len(tu.Checkpoint.Next) > 0 {
					tu.Checkpoint.Next[0] = "changed by a reader"
				}
			}
		}
		for i, tu := range slices.Backward(mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{})) {
			got := mustGet(t, s, tu.Config)
			same(fmt.Sprintf("get, checkpoint %d", len(want)-1-i), got.Checkpoint.Next, want[len(want)-1-i])
		}
	})

	// A frame is lent to PutFrame (checkpoints.Frame): a caller builds
	// every step's frame in the same memory, as the engine does, and what
	// was stored reads back as it was put, whatever the caller wrote into
	// that memory since.
	register("PutFrameKeepsNothingLent", func(t *testing.T, s checkpoints.Saver) {
		fs, ok := s.(checkpoints.FrameSaver)
		if !ok {
			t.Skip("not a FrameSaver")
		}
		names, trig := []string{"a", "b", "branch:to:n"}, []string{"branch:to:n"}
		var (
			f        checkpoints.Frame
			versions = make([]int64, 3)
			seen     = make([]int64, 1)
			news     = make([]checkpoints.FrameValue, 0, 3)
			entries  = make([]checkpoints.SeenVersions, 0, 2)
		)
		cfg := checkpoints.Config{ThreadID: "t", Namespace: "child"}
		// Steps take turns between two plans, as an agent's model and
		// tools steps do, and the last has neither.
		nexts, updated := [][]string{{"n"}, {"m", "n"}, nil}, [][]string{{"a"}, {"a", "b"}, {}}
		var want []*checkpoints.Tuple
		for step := range 5 {
			plan := step % 2
			if step == 4 {
				plan = 2
			}
			versions[0], versions[1], versions[2] = int64(step+1), int64(1+step/2), int64(step+1)
			seen[0] = int64(step)
			news = append(news[:0], checkpoints.FrameValue{Index: 0, Value: raw(t, step)})
			if step%2 == 0 {
				news = append(news, checkpoints.FrameValue{Index: 1, Value: raw(t, fmt.Sprint("b", step))})
			}
			news = append(news, checkpoints.FrameValue{Index: 2, Value: raw(t, nil)})
			entries = append(entries[:0], checkpoints.SeenVersions{Node: "__input__"})
			if step > 0 {
				entries = append(entries, checkpoints.SeenVersions{Node: "n", Channels: trig, Versions: seen})
			}
			f = checkpoints.Frame{ID: checkpoints.NewID(), TS: time.Now().UTC().Truncate(time.Microsecond), Channels: names,
				Versions: versions, New: news, Seen: entries, UpdatedChannels: updated[plan], Next: nexts[plan]}
			cp, _, err := f.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: step}
			values := maps.Clone(cp.ChannelValues)
			if step > 0 && step%2 == 1 {
				values["b"] = want[step-1].Checkpoint.ChannelValues["b"]
			}
			got, err := fs.PutFrame(ctx(), cfg, nil, &f, md)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			want = append(want, stored(cfg, cp, md, values))
			cfg = got
			// What the caller may do with lent memory once the put
			// returned: anything.
			for i := range versions {
				versions[i] = -1
			}
			seen[0] = -1
			for i := range news {
				news[i] = checkpoints.FrameValue{Index: -1}
			}
			for i := range entries {
				entries[i] = checkpoints.SeenVersions{Node: "scribbled"}
			}
			f = checkpoints.Frame{ID: "scribbled"}
		}
		for i, w := range want {
			expectTuple(t, fmt.Sprintf("get step %d", i), mustGet(t, s, w.Config), w)
		}
		for i, got := range mustList(t, s, checkpoints.ListQuery{ThreadID: "t", Namespace: "child"}, checkpoints.ListOptions{}) {
			w := want[len(want)-1-i]
			expectTuple(t, fmt.Sprintf("list step %d", len(want)-1-i), got, w)
		}
	})

	// Consecutive checkpoints of a namespace whose metadata differ in one
	// field, or only in step, each read back with their own, through Put
	// and PutFrame, by Get and by List, and after a copy of the thread.
	register("MetadataOfConsecutiveCheckpointsIsEachOwn", func(t *testing.T, s checkpoints.Saver) {
		loop := checkpoints.SourceLoop
		mds := []checkpoints.Metadata{
			{Source: checkpoints.SourceInput, Step: -1, RunID: "r1"},
			{Source: loop, Step: 0, RunID: "r1"},
			{Source: loop, Step: 1, RunID: "r1"},
			{Source: loop, Step: 1, RunID: "r2"},
			{Source: loop, Step: 2, RunID: "r2", Parents: map[string]string{"": "p1"}},
			{Source: loop, Step: 3, RunID: "r2", Parents: map[string]string{"": "p2"}},
			{Source: loop, Step: 4, RunID: "r2", Parents: map[string]string{"": "p2"}, Extra: map[string]any{"k": "v"}},
			{Source: loop, Step: 5, RunID: "r2", Parents: map[string]string{"": "p2"}},
			{Source: checkpoints.SourceUpdate, Step: 6, RunID: "r2", Parents: map[string]string{"": "p2"}},
			{Source: checkpoints.SourceUpdate, Step: 7},
		}
		_, frames := s.(checkpoints.FrameSaver)
		cfg := checkpoints.Config{ThreadID: "t", Namespace: "child"}
		var want []*checkpoints.Tuple
		for i, md := range mds {
			cp := newCheckpoint(t, map[string]any{"a": i}, map[string]int64{"a": int64(i + 1)})
			var got checkpoints.Config
			if frames && i%2 == 1 {
				f := &checkpoints.Frame{ID: cp.ID, TS: cp.TS, Channels: []string{"a"}, Versions: []int64{int64(i + 1)},
					New: []checkpoints.FrameValue{{Index: 0, Value: cp.ChannelValues["a"]}}, Seen: []checkpoints.SeenVersions{{Node: ""}}}
				var err error
				if got, err = s.(checkpoints.FrameSaver).PutFrame(ctx(), cfg, nil, f, md); err != nil {
					t.Fatalf("checkpoint %d: %v", i, err)
				}
				cp.VersionsSeen = map[string]map[string]int64{"": {}}
				cp.UpdatedChannels = nil
			} else {
				got = mustPut(t, s, cfg, cp, md, map[string]int64{"a": int64(i + 1)})
			}
			if md.Extra != nil {
				md.Extra = map[string]any{"k": "v"} // as it reads back
			}
			want = append(want, stored(cfg, cp, md, cp.ChannelValues))
			cfg = got
		}
		check := func(thread string) {
			t.Helper()
			for i, w := range want {
				w := *w
				w.Config.ThreadID = thread
				if w.ParentConfig != nil {
					p := *w.ParentConfig
					p.ThreadID = thread
					w.ParentConfig = &p
				}
				expectTuple(t, fmt.Sprintf("thread %s, get %d", thread, i), mustGet(t, s, w.Config), &w)
			}
			page := mustList(t, s, checkpoints.ListQuery{ThreadID: thread, Namespace: "child"}, checkpoints.ListOptions{MetadataOnly: true})
			if len(page) != len(want) {
				t.Fatalf("thread %s: %d checkpoints listed, want %d", thread, len(page), len(want))
			}
			for i, tu := range page {
				if w := want[len(want)-1-i].Metadata; !reflect.DeepEqual(tu.Metadata, w) {
					t.Errorf("thread %s, list %d: metadata = %#v, want %#v", thread, len(want)-1-i, tu.Metadata, w)
				}
			}
		}
		check("t")
		if err := s.CopyThread(ctx(), "t", "u"); err != nil {
			t.Fatal(err)
		}
		check("u")
	})

	register("PutAgainReplacesCheckpointAndKeepsWritesAndPosition", func(t *testing.T, s checkpoints.Saver) {
		cfg := checkpoints.Config{ThreadID: "t"}
		first := newCheckpoint(t, map[string]any{"a": 1}, map[string]int64{"a": 1})
		fcfg := mustPut(t, s, cfg, first, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"a": 1})
		mustWrite(t, s, fcfg, "task", write(t, "a", 2))
		second := newCheckpoint(t, nil, nil)
		mustPut(t, s, fcfg, second, checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
		again := *first
		again.ChannelValues = map[string]json.RawMessage{"a": raw(t, 5)}
		md := checkpoints.Metadata{Source: checkpoints.SourceUpdate, Step: 9}
		mustPut(t, s, cfg, &again, md, map[string]int64{"a": 1})
		got := mustGet(t, s, fcfg)
		expectTuple(t, "re-put", got, stored(cfg, &again, md, map[string]json.RawMessage{"a": raw(t, 5)}, pending(t, "task", "a", 2)))
		if latest := mustGet(t, s, cfg); latest.Config.CheckpointID != second.ID {
			t.Errorf("re-putting an old checkpoint made it the latest")
		}
	})

	register("SavedValuesCannotBeChangedByCallers", func(t *testing.T, s checkpoints.Saver) {
		cp := newCheckpoint(t, map[string]any{"a": "original"}, map[string]int64{"a": 1})
		md := checkpoints.Metadata{Source: checkpoints.SourceInput, Parents: map[string]string{}, Extra: map[string]any{"list": []any{"x"}}}
		cfg := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, cp, md, map[string]int64{"a": 1})
		w := write(t, "out", "written")
		mustWrite(t, s, cfg, "task", w)
		// Change everything the saver was given, and everything it returned.
		copy(cp.ChannelValues["a"], `"XXXXXXXX"`)
		cp.ChannelVersions["a"] = 99
		cp.VersionsSeen[""]["someChannel"] = 99
		md.Extra["list"].([]any)[0] = "changed"
		copy(w.Value, `"XXXXXXX"`)
		got := mustGet(t, s, cfg)
		copy(got.Checkpoint.ChannelValues["a"], `"YYYYYYYY"`)
		got.Checkpoint.ChannelVersions["a"] = 98
		got.Metadata.Extra["list"].([]any)[0] = "changed too"
		copy(got.PendingWrites[0].Value, `"YYYYYYY"`)

		again := mustGet(t, s, cfg)
		if v := string(again.Checkpoint.ChannelValues["a"]); v != `"original"` {
			t.Errorf("stored value changed to %s", v)
		}
		if again.Checkpoint.ChannelVersions["a"] != 1 || again.Checkpoint.VersionsSeen[""]["someChannel"] != 1 {
			t.Errorf("stored versions changed: %+v %+v", again.Checkpoint.ChannelVersions, again.Checkpoint.VersionsSeen)
		}
		if v := again.Metadata.Extra["list"].([]any)[0]; v != "x" {
			t.Errorf("stored metadata changed to %v", v)
		}
		if v := string(again.PendingWrites[0].Value); v != `"written"` {
			t.Errorf("stored write changed to %s", v)
		}
	})

	register("ConcurrentPutsOnManyThreads", func(t *testing.T, s checkpoints.Saver) {
		const threads, steps = 8, 10
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		for i := range threads {
			wg.Go(func() {
				cfg := checkpoints.Config{ThreadID: fmt.Sprintf("t%d", i)}
				for j := range steps {
					cp := newCheckpoint(t, map[string]any{"n": j}, map[string]int64{"n": int64(j + 1)})
					var err error
					if cfg, err = s.Put(ctx(), cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: j}, map[string]int64{"n": int64(j + 1)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := range threads {
			got := mustList(t, s, checkpoints.ListQuery{ThreadID: fmt.Sprintf("t%d", i)}, checkpoints.ListOptions{})
			if len(got) != steps || got[0].Metadata.Step != steps-1 || string(got[0].Checkpoint.ChannelValues["n"]) != fmt.Sprint(steps-1) {
				t.Errorf("thread %d: %d checkpoints, newest %+v", i, len(got), got[0].Metadata)
			}
		}
	})
}

func expectWrites(t *testing.T, tu *checkpoints.Tuple, want []checkpoints.PendingWrite) {
	t.Helper()
	expectTuple(t, "writes", &checkpoints.Tuple{Config: tu.Config, PendingWrites: tu.PendingWrites}, &checkpoints.Tuple{Config: tu.Config, PendingWrites: want})
}

// putLineage saves upstream's getTuple fixture in thread and ns: a parent
// with a pending send and a child with a regular write, and returns the
// tuples a saver should give back for them.
func putLineage(t *testing.T, s checkpoints.Saver, thread, ns string) (parent, child *checkpoints.Tuple) {
	t.Helper()
	cfg := checkpoints.Config{ThreadID: thread, Namespace: ns}
	p := newCheckpoint(t, map[string]any{"animals": []string{"dog"}}, map[string]int64{"animals": 1})
	pmd := checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1, Parents: map[string]string{}}
	pcfg := mustPut(t, s, cfg, p, pmd, map[string]int64{"animals": 1})
	mustWrite(t, s, pcfg, "pending_sends_task", write(t, checkpoints.TasksChannel, []string{"add_fish"}))

	c := newCheckpoint(t, map[string]any{"animals": []string{"dog", "fish"}}, map[string]int64{"animals": 2})
	cmd := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 0, Parents: map[string]string{ns: p.ID}}
	ccfg := mustPut(t, s, pcfg, c, cmd, map[string]int64{"animals": 2})
	mustWrite(t, s, ccfg, "add_fish", write(t, "animals", []string{"dog", "fish"}))

	parent = stored(cfg, p, pmd, p.ChannelValues, pending(t, "pending_sends_task", checkpoints.TasksChannel, []string{"add_fish"}))
	child = stored(pcfg, c, cmd, c.ChannelValues, pending(t, "add_fish", "animals", []string{"dog", "fish"}))
	return parent, child
}

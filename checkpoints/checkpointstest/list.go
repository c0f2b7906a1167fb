package checkpointstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
)

func init() {
	register("36-37_ListMatrix", listMatrix)

	register("Y04_ListNewestFirstWithFilters", func(t *testing.T, s checkpoints.Saver) {
		cfg := checkpoints.Config{ThreadID: "t"}
		var chain []string
		for i := range 4 {
			src := checkpoints.SourceInput
			if i%2 == 1 {
				src = checkpoints.SourceLoop
			}
			md := checkpoints.Metadata{Source: src, Step: i}
			if i == 2 {
				md.Extra = map[string]any{"score": 42}
			}
			cfg = mustPut(t, s, cfg, newCheckpoint(t, nil, nil), md, nil)
			mustWrite(t, s, cfg, fmt.Sprintf("task-%d", i), write(t, "x", i))
			chain = append(chain, cfg.CheckpointID)
		}
		newestFirst := slices.Clone(chain)
		slices.Reverse(newestFirst)
		q := checkpoints.ListQuery{ThreadID: "t"}
		for _, tc := range []struct {
			name string
			opts checkpoints.ListOptions
			want []string
		}{
			{"all", checkpoints.ListOptions{}, newestFirst},
			{"step", checkpoints.ListOptions{Filter: map[string]any{"step": 1}}, chain[1:2]},
			{"and", checkpoints.ListOptions{Filter: map[string]any{"source": "input", "step": 2}}, chain[2:3]},
			{"custom key", checkpoints.ListOptions{Filter: map[string]any{"score": 42}}, chain[2:3]},
			{"number by value", checkpoints.ListOptions{Filter: map[string]any{"score": json.RawMessage(`42.0`)}}, chain[2:3]},
			{"no match", checkpoints.ListOptions{Filter: map[string]any{"source": "update", "step": 99}}, nil},
			{"before", checkpoints.ListOptions{Before: chain[2]}, []string{chain[1], chain[0]}},
			{"before and limit", checkpoints.ListOptions{Before: chain[3], Limit: 1}, chain[2:3]},
			{"limit 0 is no limit", checkpoints.ListOptions{Limit: 0}, newestFirst},
		} {
			got := mustList(t, s, q, tc.opts)
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, ids(got), tc.want)
			}
			for _, tu := range got {
				expectTuple(t, tc.name, tu, mustGet(t, s, tu.Config))
			}
		}
		if _, err := s.List(ctx(), q, checkpoints.ListOptions{Limit: -1}); !errors.Is(err, checkpoints.ErrInvalidFilter) {
			t.Errorf("negative limit: err = %v, want ErrInvalidFilter", err)
		}
	})

	register("Y04_ListOneNamespaceAmongMany", func(t *testing.T, s checkpoints.Saver) {
		for _, ns := range []string{"", "child:1", "child:2"} {
			mustPut(t, s, checkpoints.Config{ThreadID: "t", Namespace: ns}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
		}
		if got := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{}); len(got) != 1 || got[0].Config.Namespace != "" {
			t.Errorf("root namespace: got %d tuples", len(got))
		}
		if got := mustList(t, s, checkpoints.ListQuery{ThreadID: "t", AllNamespaces: true}, checkpoints.ListOptions{}); len(got) != 3 {
			t.Errorf("Y12: all namespaces: got %d tuples, want 3", len(got))
		}
	})

	register("Y12_FilterSearchesAllThreads", func(t *testing.T, s checkpoints.Saver) {
		for i, th := range []string{"a", "b", "c"} {
			mustPut(t, s, checkpoints.Config{ThreadID: th}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Extra: map[string]any{"user": th, "even": i%2 == 0}}, nil)
		}
		got := mustList(t, s, checkpoints.ListQuery{}, checkpoints.ListOptions{Filter: map[string]any{"even": true}})
		var threads []string
		for _, tu := range got {
			threads = append(threads, tu.Config.ThreadID)
		}
		if !slices.Equal(threads, []string{"c", "a"}) {
			t.Errorf("got threads %v, want [c a] (newest first)", threads)
		}
	})

	register("Y14-Y15_FilterContainment", func(t *testing.T, s checkpoints.Saver) {
		extras := []map[string]any{
			{"score": nil, "user": map[string]any{"name": "ann", "access-level": "admin", "teams": []any{"red", "blue"}}},
			{"score": 3, "user.access-level": "admin", "123abc": "digits", "tags": []any{map[string]any{"k": "v", "n": 1}, "plain"}},
			{"score": 3.5, "user": map[string]any{"name": "bob"}, "tags": []any{}},
		}
		var cps []string
		for _, e := range extras {
			c := mustPut(t, s, checkpoints.Config{ThreadID: "t"}, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Extra: e}, nil)
			cps = append(cps, c.CheckpointID)
		}
		for _, tc := range []struct {
			name   string
			filter map[string]any
			want   []int // indexes into cps
		}{
			{"null matches null", map[string]any{"score": nil}, []int{0}},
			{"nested object subset", map[string]any{"user": map[string]any{"access-level": "admin"}}, []int{0}},
			{"empty object matches any object", map[string]any{"user": map[string]any{}}, []int{0, 2}},
			{"array subset", map[string]any{"user": map[string]any{"teams": []any{"blue"}}}, []int{0}},
			{"array needs every element", map[string]any{"user": map[string]any{"teams": []any{"blue", "green"}}}, nil},
			{"object inside array", map[string]any{"tags": []any{map[string]any{"k": "v"}}}, []int{1}},
			{"empty array matches any array", map[string]any{"tags": []any{}}, []int{1, 2}},
			{"scalar does not match array", map[string]any{"tags": "plain"}, nil},
			{"dotted key is literal", map[string]any{"user.access-level": "admin"}, []int{1}},
			{"leading digit key", map[string]any{"123abc": "digits"}, []int{1}},
			{"number by value", map[string]any{"score": json.RawMessage(`3.00`)}, []int{1}},
			{"exponent", map[string]any{"score": json.RawMessage(`35e-1`)}, []int{2}},
			{"float", map[string]any{"score": 3.5}, []int{2}},
			{"type matters", map[string]any{"score": "3"}, nil},
			{"missing key", map[string]any{"nope": nil}, nil},
		} {
			var want []string
			for i := len(tc.want) - 1; i >= 0; i-- {
				want = append(want, cps[tc.want[i]])
			}
			got := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{Filter: tc.filter})
			if !slices.Equal(ids(got), want) {
				t.Errorf("%s: got %v, want %v", tc.name, ids(got), want)
			}
		}
	})

	register("ListMetadataOnlyLoadsNoValues", func(t *testing.T, s checkpoints.Saver) {
		_, c := putLineage(t, s, "t", "")
		got := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{MetadataOnly: true, Limit: 1})
		if len(got) != 1 {
			t.Fatalf("got %d tuples", len(got))
		}
		tu := got[0]
		if tu.Checkpoint == nil || tu.Checkpoint.ChannelValues != nil || tu.PendingWrites != nil {
			t.Fatalf("metadata-only tuple carries values or writes: %+v", tu)
		}
		want := *c
		cp := *c.Checkpoint
		cp.ChannelValues = nil
		want.Checkpoint, want.PendingWrites = &cp, nil
		expectTuple(t, "metadata only", tu, &want)
	})

	register("ListPagesByBeforeCursor", func(t *testing.T, s checkpoints.Saver) {
		cfg := checkpoints.Config{ThreadID: "t"}
		var all []string
		for i := range 10 {
			cfg = mustPut(t, s, cfg, newCheckpoint(t, nil, nil), checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}, nil)
			all = append([]string{cfg.CheckpointID}, all...)
		}
		var paged []string
		before := ""
		for {
			page := mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{Before: before, Limit: 3, MetadataOnly: true})
			if len(page) == 0 {
				break
			}
			paged = append(paged, ids(page)...)
			before = page[len(page)-1].Config.CheckpointID
		}
		if !slices.Equal(paged, all) {
			t.Errorf("pages gave %v, want %v", paged, all)
		}
	})

	register("OrderIsBySequenceWhenIDsAreNotInClockOrder", func(t *testing.T, s checkpoints.Saver) {
		// Ids made by another process with a clock behind ours: the later
		// puts have smaller ids. Latest and listing follow the saves.
		var made []string
		for range 3 {
			made = append(made, checkpoints.NewID())
		}
		cfg := checkpoints.Config{ThreadID: "t"}
		var saved []string
		for i := len(made) - 1; i >= 0; i-- {
			cp := newCheckpoint(t, nil, nil)
			cp.ID = made[i]
			cfg = mustPut(t, s, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop}, nil)
			saved = append([]string{cp.ID}, saved...)
		}
		if got := mustGet(t, s, checkpoints.Config{ThreadID: "t"}); got.Config.CheckpointID != made[0] {
			t.Errorf("latest = %s, want the last saved %s", got.Config.CheckpointID, made[0])
		}
		if got := ids(mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{})); !slices.Equal(got, saved) {
			t.Errorf("list = %v, want save order newest first %v", got, saved)
		}
		if got := ids(mustList(t, s, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{Before: saved[1]})); !slices.Equal(got, saved[2:]) {
			t.Errorf("before %s = %v, want %v", saved[1], got, saved[2:])
		}
	})
}

// listMatrix runs upstream's list matrix (cases 36 and 37): eight tuples in
// two threads and two namespaces, listed with every combination of thread,
// namespace, limit, before and filter. The expected result of each
// combination is computed from the fixture: the tuples that satisfy every
// condition, newest first, cut to the limit, each equal to what Get returns.
func listMatrix(t *testing.T, s checkpoints.Saver) {
	var fixture []*checkpoints.Tuple // in put order, so ids increase
	for _, th := range []string{"thread-1", "thread-2"} {
		for _, ns := range namespaces {
			p, c := putLineage(t, s, th, ns)
			fixture = append(fixture, p, c)
		}
	}
	threadAxis := []*string{nil, ptr("thread-1"), ptr("no-such-thread")}
	nsAxis := []*string{nil, ptr(""), ptr("child")}
	limitAxis := []int{0, 1, 2}
	beforeAxis := []*checkpoints.Tuple{nil, fixture[0], fixture[1]}
	filterAxis := []map[string]any{nil, {}, {"source": "input"}, {"source": "loop"}}

	var combos, nonEmpty int
	for _, th := range threadAxis {
		for _, ns := range nsAxis {
			for _, limit := range limitAxis {
				for _, before := range beforeAxis {
					for _, filter := range filterAxis {
						q := checkpoints.ListQuery{AllNamespaces: ns == nil}
						if th != nil {
							q.ThreadID = *th
						}
						if ns != nil {
							q.Namespace = *ns
						}
						opts := checkpoints.ListOptions{Limit: limit, Filter: filter}
						if before != nil {
							opts.Before = before.Config.CheckpointID
						}
						var want []string
						for i := len(fixture) - 1; i >= 0; i-- {
							f := fixture[i]
							if (th == nil || f.Config.ThreadID == *th) &&
								(ns == nil || f.Config.Namespace == *ns) &&
								(before == nil || f.Config.CheckpointID < before.Config.CheckpointID) &&
								(filter["source"] == nil || string(f.Metadata.Source) == filter["source"]) {
								want = append(want, f.Config.CheckpointID)
							}
						}
						if limit > 0 && len(want) > limit {
							want = want[:limit]
						}
						combos++
						if len(want) > 0 {
							nonEmpty++
						}
						got := mustList(t, s, q, opts)
						if !slices.Equal(ids(got), want) {
							t.Errorf("List(%+v, limit=%d before=%v filter=%v) = %v, want %v", q, limit, before != nil, filter, ids(got), want)
							continue
						}
						for _, tu := range got {
							expectTuple(t, "listed tuple", tu, mustGet(t, s, tu.Config))
						}
					}
				}
			}
		}
	}
	if combos != 324 || nonEmpty == 0 {
		t.Fatalf("matrix ran %d combinations (%d non-empty); the fixture is broken", combos, nonEmpty)
	}
}

func ptr[T any](v T) *T { return &v }

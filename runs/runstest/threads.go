package runstest

// The cases of what the Agent Server API's threads need of the registry:
// metadata, creation and state times, threads without a graph, search by
// metadata and ids, sorts, paging, counting and deleting.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// metaJSON is m as compact JSON with sorted keys; nil and empty are "{}".
func metaJSON(t *testing.T, m map[string]any) string {
	t.Helper()
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("metadata %v: %v", m, err)
	}
	return string(b)
}

func withMeta(r runs.ThreadRecord, m map[string]any) runs.ThreadRecord {
	r.Metadata = m
	return r
}

func metadataRoundTrip(t *testing.T, s runs.ThreadStore) {
	in := map[string]any{
		"graph_id": "agent",
		"ünï":      "cödé ✓ 日本語 🎉",
		"n":        7,
		"f":        2.5,
		"neg":      -0.125,
		"big":      1e21,
		"edge":     float64(1 << 53),
		"num":      json.Number("42"),
		"ok":       true,
		"nothing":  nil,
		"list":     []any{1, "two", []any{3.5}, map[string]any{"k": false}},
		"nested":   map[string]any{"a": map[string]any{"b": []any{}, "c": map[string]any{}}, "quote": "\"<&>\""},
	}
	// What every store reads back: what encoding/json decodes into any.
	want := map[string]any{
		"graph_id": "agent",
		"ünï":      "cödé ✓ 日本語 🎉",
		"n":        float64(7),
		"f":        2.5,
		"neg":      -0.125,
		"big":      1e21,
		"edge":     float64(1 << 53),
		"num":      float64(42),
		"ok":       true,
		"nothing":  nil,
		"list":     []any{float64(1), "two", []any{3.5}, map[string]any{"k": false}},
		"nested":   map[string]any{"a": map[string]any{"b": []any{}, "c": map[string]any{}}, "quote": "\"<&>\""},
	}
	r := withMeta(rec("meta", "g", runs.StatusIdle, base), in)
	mustSave(t, s, r)
	got := mustGet(t, s, "meta")
	if !reflect.DeepEqual(got.Metadata, want) {
		t.Fatalf("metadata read back as\n %#v\nwant\n %#v", got.Metadata, want)
	}
	same(t, got, r)
	listed := mustList(t, s, runs.ThreadFilter{})
	if len(listed) != 1 || !reflect.DeepEqual(listed[0].Metadata, want) {
		t.Fatalf("a list reads the metadata back as %v", listed)
	}
	// A replacing save replaces the metadata; an empty object reads back
	// as none.
	for _, m := range []map[string]any{{"only": "this"}, {}, nil} {
		mustSave(t, s, withMeta(rec("meta", "g", runs.StatusIdle, base), m))
		if got := mustGet(t, s, "meta"); metaJSON(t, got.Metadata) != metaJSON(t, m) || len(m) == 0 && got.Metadata != nil {
			t.Fatalf("after saving metadata %v it reads back as %#v", m, got.Metadata)
		}
	}
	// The store keeps its own copy, and hands out copies.
	inner := map[string]any{"x": "before"}
	mustSave(t, s, withMeta(rec("copy", "g", runs.StatusIdle, base), map[string]any{"inner": inner}))
	inner["x"] = "changed by the caller"
	got = mustGet(t, s, "copy")
	got.Metadata["inner"].(map[string]any)["x"] = "changed by a reader"
	if again := mustGet(t, s, "copy"); again.Metadata["inner"].(map[string]any)["x"] != "before" {
		t.Fatalf("changing a map after save or after get reached the store: %v", again.Metadata)
	}
}

func metadataLimits(t *testing.T, s runs.ThreadStore) {
	// {"k":"…"} is 8 bytes of JSON around the string.
	fits := strings.Repeat("x", runs.MaxMetadataBytes-8)
	deep := map[string]any{}
	for cur, i := deep, 1; i < runs.MaxMetadataDepth; i++ {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	tooDeep := map[string]any{"d": deep}
	for _, tc := range []struct {
		name string
		meta map[string]any
		says string
	}{
		{"over 64 KiB", map[string]any{"k": fits + "x"}, "limit"},
		{"NaN", map[string]any{"n": math.NaN()}, "metadata"},
		{"infinity", map[string]any{"n": math.Inf(1)}, "metadata"},
		{"a channel", map[string]any{"c": make(chan int)}, "metadata"},
		{"NUL in a string", map[string]any{"a": map[string]any{"b": "x\x00y"}}, "NUL"},
		{"NUL in a key", map[string]any{"a\x00": 1}, "NUL"},
		{"invalid UTF-8", map[string]any{"a": []any{"\xff"}}, "UTF-8"},
		{"invalid UTF-8 in a key", map[string]any{"\xfe": 1}, "UTF-8"},
		{"too deep", tooDeep, "deeper"},
	} {
		err := s.SaveThread(ctx(), withMeta(rec("bad", "g", runs.StatusIdle, base), tc.meta))
		if !errors.Is(err, runs.ErrInvalidInput) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "metadata") {
			t.Errorf("%s: SaveThread = %v, want ErrInvalidInput naming metadata and mentioning %q", tc.name, err, tc.says)
		} else if len(err.Error()) > 400 {
			t.Errorf("%s: the error is %d bytes long", tc.name, len(err.Error()))
		}
		if _, err := s.ListThreads(ctx(), runs.ThreadFilter{Metadata: tc.meta}); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("%s: ListThreads with it as a filter = %v, want ErrInvalidInput", tc.name, err)
		}
	}
	if got := mustList(t, s, runs.ThreadFilter{}); len(got) != 0 {
		t.Fatalf("refused saves wrote %v", ids(got))
	}
	// The limits themselves are accepted.
	mustSave(t, s, withMeta(rec("big", "g", runs.StatusIdle, base), map[string]any{"k": fits}))
	if got := mustGet(t, s, "big"); got.Metadata["k"] != fits {
		t.Fatal("metadata of exactly the limit did not read back")
	}
	mustSave(t, s, withMeta(rec("deep", "g", runs.StatusIdle, base), deep))
	if got := mustGet(t, s, "deep"); metaJSON(t, got.Metadata) != metaJSON(t, deep) {
		t.Fatal("metadata nested to the limit did not read back")
	}
}

func createdKept(t *testing.T, s runs.ThreadStore) {
	// A new thread without Created gets the store's clock.
	before := time.Now().Add(-time.Millisecond)
	mustSave(t, s, rec("stamped", "g", runs.StatusRunning, base))
	after := time.Now().Add(time.Millisecond)
	first := mustGet(t, s, "stamped")
	if first.Created.Before(before) || first.Created.After(after) || first.Created.Location() != time.UTC {
		t.Fatalf("created %v, want now (between %v and %v) in UTC", first.Created, before, after)
	}
	// Later saves keep it, whatever they say.
	for _, c := range []time.Time{{}, base.Add(-time.Hour), base.Add(time.Hour)} {
		r := rec("stamped", "g", runs.StatusIdle, base.Add(time.Minute))
		r.Created = c
		mustSave(t, s, r)
		if got := mustGet(t, s, "stamped"); !got.Created.Equal(first.Created) {
			t.Fatalf("a save with created %v moved it from %v to %v", c, first.Created, got.Created)
		}
	}
	// A new thread's given Created is kept (to the microsecond, in UTC).
	given := rec("given", "g", runs.StatusIdle, base)
	given.Created = base.Add(-24 * time.Hour)
	mustSave(t, s, given)
	same(t, mustGet(t, s, "given"), given)
	// Settling an orphan keeps it too.
	orphan := rec("orphan", "g", runs.StatusRunning, base)
	orphan.Created = base.Add(-time.Hour)
	mustSave(t, s, orphan)
	settled := orphan
	settled.Status, settled.Error, settled.Created = runs.StatusError, "stopped", base.Add(time.Hour)
	settled.Metadata = map[string]any{"kept": "through settle"}
	if ok, err := s.SettleThread(ctx(), settled, "", orphan.RunID); err != nil || !ok {
		t.Fatalf("SettleThread = %v, %v", ok, err)
	}
	settled.Created = orphan.Created
	same(t, mustGet(t, s, "orphan"), settled)
	// The order by creation follows the kept times, not the last save's.
	got := ids(mustList(t, s, runs.ThreadFilter{SortBy: "created_at", SortOrder: "asc"}))
	if want := []string{"given", "orphan", "stamped"}; !slices.Equal(got, want) {
		t.Fatalf("by created_at: %v, want %v", got, want)
	}
}

func stateUpdatedRoundTrip(t *testing.T, s runs.ThreadStore) {
	r := rec("st", "g", runs.StatusIdle, base)
	mustSave(t, s, r)
	if got := mustGet(t, s, "st"); !got.StateUpdated.IsZero() {
		t.Fatalf("a thread whose state was never written has state updated %v, want zero", got.StateUpdated)
	}
	r.StateUpdated = base.Add(-time.Second)
	mustSave(t, s, r)
	same(t, mustGet(t, s, "st"), r)
	// Saved back to zero, it reads back zero.
	r.StateUpdated = time.Time{}
	mustSave(t, s, r)
	same(t, mustGet(t, s, "st"), r)
}

func graphless(t *testing.T, s runs.ThreadStore) {
	// A thread made before any run: idle, no graph, no run.
	bare := runs.ThreadRecord{ID: "new", Status: runs.StatusIdle, Updated: base, Metadata: map[string]any{"user": "u1"}}
	mustSave(t, s, bare)
	same(t, mustGet(t, s, "new"), bare)
	if got := ids(mustList(t, s, runs.ThreadFilter{Status: runs.StatusIdle})); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("idle threads: %v, want [new]", got)
	}
	for _, tc := range []struct {
		name string
		r    runs.ThreadRecord
	}{
		{"running", runs.ThreadRecord{ID: "x", Status: runs.StatusRunning, RunID: "r1", Updated: base}},
		{"running without a run id", runs.ThreadRecord{ID: "x", Status: runs.StatusRunning, Updated: base}},
		{"interrupted", runs.ThreadRecord{ID: "x", Status: runs.StatusInterrupted, Updated: base}},
		{"error", runs.ThreadRecord{ID: "x", Status: runs.StatusError, Error: "boom", Updated: base}},
		{"idle with a run id", runs.ThreadRecord{ID: "x", Status: runs.StatusIdle, RunID: "r1", Updated: base}},
	} {
		if err := s.SaveThread(ctx(), tc.r); !errors.Is(err, runs.ErrInvalidInput) || !strings.Contains(err.Error(), "graph") {
			t.Errorf("%s without a graph: SaveThread = %v, want ErrInvalidInput about the graph", tc.name, err)
		}
	}
	if _, err := s.GetThread(ctx(), "x"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("a refused graph-less save wrote a record: %v", err)
	}
	// The first run binds the graph; the metadata stays as saved.
	bound := bare
	bound.Graph, bound.Status, bound.RunID, bound.Updated = "agent", runs.StatusRunning, "r1", base.Add(time.Second)
	mustSave(t, s, bound)
	same(t, mustGet(t, s, "new"), bound)
	if got := ids(mustList(t, s, runs.ThreadFilter{Graph: "agent"})); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("threads of agent: %v, want [new]", got)
	}
}

// searchFixture saves threads with metadata for the search cases.
func searchFixture(t *testing.T, s runs.ThreadStore) {
	for i, m := range []map[string]any{
		{"user": "ann", "n": 1, "tags": []any{"a", "b"}, "deep": map[string]any{"x": map[string]any{"y": "z", "w": 2}}},
		{"user": "ann", "n": 1.0, "tags": []any{"b"}},
		{"user": "bob", "n": 2, "tags": []any{"a", []any{"nested"}, map[string]any{"k": "v", "o": 1}}},
		{"user": "bob", "n": "1"},
		nil,
	} {
		mustSave(t, s, withMeta(rec(fmt.Sprintf("m%d", i), []string{"g", "h"}[i%2], runs.Statuses[i%2], base.Add(time.Duration(i)*time.Second)), m))
	}
}

func listByMetadata(t *testing.T, s runs.ThreadStore) {
	searchFixture(t, s)
	for _, tc := range []struct {
		filter runs.ThreadFilter
		want   []string // newest first
	}{
		{runs.ThreadFilter{Metadata: map[string]any{}}, []string{"m4", "m3", "m2", "m1", "m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}}, []string{"m1", "m0"}},
		// Numbers are compared as numbers: 1 and 1.0 are one; "1" is not.
		{runs.ThreadFilter{Metadata: map[string]any{"n": 1}}, []string{"m1", "m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"n": json.Number("1.0")}}, []string{"m1", "m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"n": "1"}}, []string{"m3"}},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "bob", "n": 2}}, []string{"m2"}},
		// Nested objects are contained when each of their keys is.
		{runs.ThreadFilter{Metadata: map[string]any{"deep": map[string]any{"x": map[string]any{"y": "z"}}}}, []string{"m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"deep": map[string]any{}}}, []string{"m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"deep": map[string]any{"x": map[string]any{"y": "other"}}}}, nil},
		{runs.ThreadFilter{Metadata: map[string]any{"deep": map[string]any{"x": "z"}}}, nil},
		// Arrays contain each element given, in any order.
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{"b"}}}, []string{"m1", "m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{"b", "a"}}}, []string{"m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{}}}, []string{"m2", "m1", "m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{map[string]any{"k": "v"}}}}, []string{"m2"}},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{[]any{"nested"}}}}, []string{"m2"}},
		// A scalar is not an array holding it, below the top level.
		{runs.ThreadFilter{Metadata: map[string]any{"tags": "b"}}, nil},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{"nested"}}}, nil},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "carol"}}, nil},
		{runs.ThreadFilter{Metadata: map[string]any{"missing": nil}}, nil},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}, Status: runs.StatusRunning}, []string{"m1"}},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}, Graph: "g"}, []string{"m0"}},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}, Limit: 1}, []string{"m1"}},
	} {
		if got := ids(mustList(t, s, tc.filter)); !slices.Equal(got, tc.want) {
			t.Errorf("ListThreads(metadata %s, status %q, graph %q, limit %d) = %v, want %v",
				metaJSON(t, tc.filter.Metadata), tc.filter.Status, tc.filter.Graph, tc.filter.Limit, got, tc.want)
		}
	}
}

func listByIDs(t *testing.T, s runs.ThreadStore) {
	searchFixture(t, s)
	for _, tc := range []struct {
		filter runs.ThreadFilter
		want   []string
	}{
		{runs.ThreadFilter{IDs: []string{"m0", "m3"}}, []string{"m3", "m0"}},
		{runs.ThreadFilter{IDs: []string{"m2", "unknown", "m2"}}, []string{"m2"}},
		{runs.ThreadFilter{IDs: []string{"unknown"}}, nil},
		{runs.ThreadFilter{IDs: []string{"m0", "m1", "m2"}, Metadata: map[string]any{"user": "ann"}}, []string{"m1", "m0"}},
		{runs.ThreadFilter{IDs: []string{"m0", "m1", "m2"}, Status: runs.StatusIdle}, []string{"m2", "m0"}},
		{runs.ThreadFilter{IDs: []string{"m0", "m1", "m2"}, Limit: 2, Offset: 1}, []string{"m1", "m0"}},
	} {
		if got := ids(mustList(t, s, tc.filter)); !slices.Equal(got, tc.want) {
			t.Errorf("ListThreads(%+v) = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func listSorts(t *testing.T, s runs.ThreadStore) {
	u := func(i int) time.Time { return base.Add(time.Duration(i) * time.Minute) }
	for _, r := range []struct {
		id                         string
		status                     runs.Status
		created, updated, stateUpd int // minutes; stateUpd < 0: never
	}{
		{"a", runs.StatusIdle, 1, 2, -1},
		{"b", runs.StatusRunning, 1, 1, 10},
		{"c", runs.StatusIdle, 2, 2, 10},
		{"d", runs.StatusError, 0, 3, -1},
		{"e", runs.StatusInterrupted, 2, 0, 20},
	} {
		x := rec(r.id, "g", r.status, u(r.updated))
		x.Created = u(r.created)
		if r.stateUpd >= 0 {
			x.StateUpdated = u(r.stateUpd)
		}
		mustSave(t, s, x)
	}
	// Ties are by id, ascending, in both directions; a thread whose state
	// was never written is the oldest.
	for _, tc := range []struct {
		by        string
		asc, desc []string
	}{
		{"thread_id", []string{"a", "b", "c", "d", "e"}, []string{"e", "d", "c", "b", "a"}},
		{"status", []string{"d", "a", "c", "e", "b"}, []string{"b", "e", "a", "c", "d"}},
		{"created_at", []string{"d", "a", "b", "c", "e"}, []string{"c", "e", "a", "b", "d"}},
		{"updated_at", []string{"e", "b", "a", "c", "d"}, []string{"d", "a", "c", "b", "e"}},
		{"", []string{"e", "b", "a", "c", "d"}, []string{"d", "a", "c", "b", "e"}},
		{"state_updated_at", []string{"a", "d", "b", "c", "e"}, []string{"e", "b", "c", "a", "d"}},
	} {
		for _, o := range []struct {
			order string
			want  []string
		}{{"asc", tc.asc}, {"desc", tc.desc}, {"", tc.desc}} {
			f := runs.ThreadFilter{SortBy: tc.by, SortOrder: o.order}
			if got := ids(mustList(t, s, f)); !slices.Equal(got, o.want) {
				t.Errorf("sort by %q %q: %v, want %v", tc.by, o.order, got, o.want)
			}
			// Paging one at a time walks the same order.
			var paged []string
			for off := range 6 {
				f.Limit, f.Offset = 1, off
				paged = append(paged, ids(mustList(t, s, f))...)
			}
			if !slices.Equal(paged, o.want) {
				t.Errorf("sort by %q %q, one page at a time: %v, want %v", tc.by, o.order, paged, o.want)
			}
		}
	}
}

func listOffset(t *testing.T, s runs.ThreadStore) {
	for i := range 5 {
		mustSave(t, s, rec(fmt.Sprintf("t%d", i), "g", runs.StatusIdle, base.Add(time.Duration(i)*time.Second)))
	}
	for _, tc := range []struct {
		limit, offset int
		want          []string
	}{
		{2, 0, []string{"t4", "t3"}},
		{2, 2, []string{"t2", "t1"}},
		{2, 4, []string{"t0"}},
		{2, 5, nil},
		{2, 1000, nil},
		{0, 3, []string{"t1", "t0"}},
		{0, 0, []string{"t4", "t3", "t2", "t1", "t0"}},
	} {
		if got := ids(mustList(t, s, runs.ThreadFilter{Limit: tc.limit, Offset: tc.offset})); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d offset %d: %v, want %v", tc.limit, tc.offset, got, tc.want)
		}
	}
}

func countThreads(t *testing.T, s runs.ThreadStore) {
	count := func(f runs.ThreadFilter) int {
		t.Helper()
		n, err := s.CountThreads(ctx(), f)
		if err != nil {
			t.Fatalf("CountThreads(%+v): %v", f, err)
		}
		return n
	}
	if n := count(runs.ThreadFilter{}); n != 0 {
		t.Fatalf("a new store counts %d threads", n)
	}
	searchFixture(t, s)
	for _, tc := range []struct {
		f    runs.ThreadFilter
		want int
	}{
		{runs.ThreadFilter{}, 5},
		// Limit, offset and order do not change a count.
		{runs.ThreadFilter{Limit: 1, Offset: 2, SortBy: "status", SortOrder: "asc"}, 5},
		{runs.ThreadFilter{Offset: 10}, 5},
		{runs.ThreadFilter{Status: runs.StatusIdle}, 3},
		{runs.ThreadFilter{Graph: "h"}, 2},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}}, 2},
		{runs.ThreadFilter{Metadata: map[string]any{"tags": []any{"a"}}, Status: runs.StatusIdle}, 2},
		{runs.ThreadFilter{IDs: []string{"m1", "m4", "nope"}}, 2},
		{runs.ThreadFilter{Metadata: map[string]any{"user": "carol"}}, 0},
	} {
		if n := count(tc.f); n != tc.want {
			t.Errorf("CountThreads(%+v) = %d, want %d", tc.f, n, tc.want)
		}
		f := tc.f
		f.Limit, f.Offset = 0, 0
		if l := len(mustList(t, s, f)); l != tc.want {
			t.Errorf("the count of %+v is %d but the list has %d", tc.f, tc.want, l)
		}
	}
	for _, f := range badFilters() {
		if n, err := s.CountThreads(ctx(), f); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("CountThreads(%+v) = %d, %v; want ErrInvalidInput", f, n, err)
		}
	}
}

func deleteThread(t *testing.T, s runs.ThreadStore) {
	keep := withMeta(rec("keep", "g", runs.StatusIdle, base), map[string]any{"user": "ann"})
	mustSave(t, s, keep)
	gone := withMeta(rec("gone", "g", runs.StatusInterrupted, base.Add(time.Second)), map[string]any{"user": "ann"})
	gone.Created = base.Add(-time.Hour)
	mustSave(t, s, gone)
	if err := s.DeleteThread(ctx(), "gone"); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	if _, err := s.GetThread(ctx(), "gone"); !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("GetThread after delete = %v, want ErrUnknownThread", err)
	}
	if got := ids(mustList(t, s, runs.ThreadFilter{Metadata: map[string]any{"user": "ann"}})); !slices.Equal(got, []string{"keep"}) {
		t.Fatalf("after delete the list is %v, want [keep]", got)
	}
	if n, err := s.CountThreads(ctx(), runs.ThreadFilter{}); err != nil || n != 1 {
		t.Fatalf("after delete the count is %d, %v; want 1", n, err)
	}
	same(t, mustGet(t, s, "keep"), keep)
	err := s.DeleteThread(ctx(), "gone")
	if !errors.Is(err, runs.ErrUnknownThread) || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a second DeleteThread = %v, want ErrUnknownThread naming the thread", err)
	}
	for _, id := range []string{"", "a/b", "..", "nul\x00"} {
		if err := s.DeleteThread(ctx(), id); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("DeleteThread(%q) = %v, want ErrInvalidInput", id, err)
		}
	}
	// Saved again, the id is a new thread: nothing of the old one is left.
	again := rec("gone", "g", runs.StatusIdle, base.Add(time.Minute))
	again.Created = base.Add(time.Minute)
	mustSave(t, s, again)
	same(t, mustGet(t, s, "gone"), again)
}

// badFilters are filters every store refuses with ErrInvalidInput.
func badFilters() []runs.ThreadFilter {
	return []runs.ThreadFilter{
		{Status: "paused"},
		{Status: "IDLE"},
		{Graph: "a/b"},
		{Graph: strings.Repeat("g", 129)},
		{Limit: -1},
		{Offset: -1},
		{SortBy: "name"},
		{SortBy: "updated"},
		{SortBy: "created_at; DROP TABLE studio_threads"},
		{SortOrder: "ascending"},
		{SortOrder: "ASC"},
		{IDs: []string{"ok", "a/b"}},
		{IDs: []string{""}},
		{IDs: make([]string, runs.MaxFilterIDs+1)},
		{Metadata: map[string]any{"k": "\x00"}},
	}
}

// Package runstest is the conformance suite every runs.ThreadStore must
// pass, in the manner of river's riverdrivertest: a backend's test calls
//
//	runstest.Exercise(t, func(t *testing.T) runs.ThreadStore { ... })
//
// and Exercise runs one parallel subtest per behaviour, each on a store of
// its own (a store must start empty: several cases list every thread).
//
// It covers saving (create and replace), reading back every field
// (metadata, creation and state times included), unknown and malformed
// ids, threads without a graph, listing (filters by status, graph, ids and
// metadata containment, every order both ways with ties by id, limits and
// offsets), counting, deleting, failing the runs of a stopped process,
// and input the stores must refuse with runs.ErrInvalidInput, writing
// nothing.
package runstest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// Exercise runs the conformance suite against the stores newStore makes.
// newStore is called once per subtest and must return an empty store; it
// may register cleanups on t.
func Exercise(t *testing.T, newStore func(t *testing.T) runs.ThreadStore) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}

var cases = []struct {
	name string
	run  func(t *testing.T, s runs.ThreadStore)
}{
	{"SaveThenGetReturnsEveryField", saveThenGet},
	{"SaveReplacesTheRecord", saveReplaces},
	{"GetUnknownThread", getUnknown},
	{"GetMalformedID", getMalformed},
	{"ListNewestFirstTiesByID", listOrder},
	{"ListFilters", listFilters},
	{"ListLimit", listLimit},
	{"ListRejectsBadFilters", listBadFilters},
	{"OrphansAreRunningThreadsOfSilentOwners", orphans},
	{"HeartbeatAndOrphansRejectBadInput", orphansBad},
	{"SaveRejectsBadRecords", saveBad},
	{"RecordsAreCopies", recordsAreCopies},
	{"MetadataRoundTrip", metadataRoundTrip},
	{"MetadataLimits", metadataLimits},
	{"CreatedIsKeptAcrossSaves", createdKept},
	{"StateUpdatedRoundTrip", stateUpdatedRoundTrip},
	{"ThreadsWithoutAGraph", graphless},
	{"ListByMetadataContainment", listByMetadata},
	{"ListByIDs", listByIDs},
	{"ListSorts", listSorts},
	{"ListOffsetPages", listOffset},
	{"CountThreads", countThreads},
	{"DeleteThread", deleteThread},
}

func ctx() context.Context { return context.Background() }

// base is a fixed instant with nanoseconds, to show that stores keep
// microseconds.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

func rec(id, graph string, status runs.Status, at time.Time) runs.ThreadRecord {
	return runs.ThreadRecord{ID: id, Graph: graph, Status: status, RunID: "run-" + id, Updated: at}
}

func mustSave(t *testing.T, s runs.ThreadStore, r runs.ThreadRecord) {
	t.Helper()
	if err := s.SaveThread(ctx(), r); err != nil {
		t.Fatalf("SaveThread(%q): %v", r.ID, err)
	}
}

func mustGet(t *testing.T, s runs.ThreadStore, id string) runs.ThreadRecord {
	t.Helper()
	r, err := s.GetThread(ctx(), id)
	if err != nil {
		t.Fatalf("GetThread(%q): %v", id, err)
	}
	return r
}

func mustList(t *testing.T, s runs.ThreadStore, f runs.ThreadFilter) []runs.ThreadRecord {
	t.Helper()
	rs, err := s.ListThreads(ctx(), f)
	if err != nil {
		t.Fatalf("ListThreads(%+v): %v", f, err)
	}
	return rs
}

func ids(rs []runs.ThreadRecord) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// same compares records as a user sees them: the same instants (in UTC,
// to the microsecond), the same lists, an empty list being one never set,
// and the same metadata as JSON. A want without Created takes any the
// store stamped.
func same(t *testing.T, got, want runs.ThreadRecord) {
	t.Helper()
	for _, ts := range []struct {
		what      string
		got, want time.Time
	}{{"updated", got.Updated, want.Updated}, {"created", got.Created, want.Created}, {"state updated", got.StateUpdated, want.StateUpdated}} {
		if ts.what == "created" && ts.want.IsZero() {
			if ts.got.IsZero() || ts.got.Location() != time.UTC {
				t.Errorf("thread %q: created %v, want a time stamped by the store, in UTC", want.ID, ts.got)
			}
			continue
		}
		wantAt := ts.want.UTC().Truncate(time.Microsecond)
		if !ts.got.Equal(wantAt) || !ts.got.IsZero() && ts.got.Location() != time.UTC {
			t.Errorf("thread %q: %s %v, want %v in UTC (kept to the microsecond)", want.ID, ts.what, ts.got, wantAt)
		}
	}
	if g, w := metaJSON(t, got.Metadata), metaJSON(t, want.Metadata); g != w {
		t.Errorf("thread %q: metadata read back as %s, want %s", want.ID, g, w)
	}
	got.Updated, want.Updated = time.Time{}, time.Time{}
	got.Created, want.Created, got.StateUpdated, want.StateUpdated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	got.Metadata, want.Metadata = nil, nil
	g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want)
	if g != w {
		t.Errorf("thread %q read back as\n %s\nwant\n %s", want.ID, g, w)
	}
}

func saveThenGet(t *testing.T, s runs.ThreadStore) {
	full := runs.ThreadRecord{
		ID: "th-1.A_b", Graph: "review", Status: runs.StatusInterrupted, RunID: "0198c0de-7a1b-7cc2-9d3e-4f5a6b7c8d9e",
		Error: "ünïcödé ✓ and a \"quote\"", Updated: base,
		Before: []string{"approve"}, After: []string{"draft", "check"},
		Options: runs.StartOptions{InterruptBefore: []string{"*"}, InterruptAfter: []string{"draft"}, RecursionLimit: 42},
	}
	mustSave(t, s, full)
	same(t, mustGet(t, s, full.ID), full)

	// The smallest record: no run, no lists, no options.
	bare := runs.ThreadRecord{ID: "bare", Graph: "g", Status: runs.StatusIdle, Updated: base}
	mustSave(t, s, bare)
	got := mustGet(t, s, "bare")
	same(t, got, bare)
	if got.Before != nil || got.After != nil || got.Options.InterruptBefore != nil || got.Options.InterruptAfter != nil {
		t.Errorf("unset lists read back as %+v, want nil", got)
	}
	// An empty list is read back like one never set.
	empty := bare
	empty.ID, empty.Before, empty.Options.InterruptAfter = "empty", []string{}, []string{}
	mustSave(t, s, empty)
	if got := mustGet(t, s, "empty"); got.Before != nil || got.Options.InterruptAfter != nil {
		t.Errorf("empty lists read back as %+v, want nil", got)
	}
}

func saveReplaces(t *testing.T, s runs.ThreadStore) {
	first := rec("t", "g", runs.StatusRunning, base)
	first.Options.InterruptBefore = []string{"a"}
	mustSave(t, s, first)
	second := rec("t", "g", runs.StatusError, base.Add(time.Second))
	second.RunID, second.Error = "run-2", "boom"
	mustSave(t, s, second)
	same(t, mustGet(t, s, "t"), second)
	if got := ids(mustList(t, s, runs.ThreadFilter{})); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("after two saves of one thread the list is %v, want [t]", got)
	}
}

func getUnknown(t *testing.T, s runs.ThreadStore) {
	mustSave(t, s, rec("known", "g", runs.StatusIdle, base))
	_, err := s.GetThread(ctx(), "unknown")
	if !errors.Is(err, runs.ErrUnknownThread) {
		t.Fatalf("GetThread(unknown) = %v, want ErrUnknownThread", err)
	}
	if !strings.Contains(err.Error(), "unknown") {
		t.Errorf("error %q does not name the thread", err)
	}
}

func getMalformed(t *testing.T, s runs.ThreadStore) {
	for _, id := range []string{"", "a/b", "../etc", "sp ace", "nul\x00", strings.Repeat("x", 129), "'; DROP TABLE studio_threads; --"} {
		_, err := s.GetThread(ctx(), id)
		if !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("GetThread(%.40q) = %v, want ErrInvalidInput", id, err)
		}
	}
}

func listOrder(t *testing.T, s runs.ThreadStore) {
	// Ties are broken by id, bytewise: upper case before '_' before lower.
	for _, r := range []runs.ThreadRecord{
		rec("old", "g", runs.StatusIdle, base.Add(-time.Hour)),
		rec("b", "g", runs.StatusIdle, base),
		rec("B", "g", runs.StatusIdle, base),
		rec("_x", "g", runs.StatusIdle, base),
		rec("new", "g", runs.StatusIdle, base.Add(time.Minute)),
		// 1µs newer than the tie: microseconds order.
		rec("micro", "g", runs.StatusIdle, base.Add(time.Microsecond)),
	} {
		mustSave(t, s, r)
	}
	want := []string{"new", "micro", "B", "_x", "b", "old"}
	if got := ids(mustList(t, s, runs.ThreadFilter{})); !slices.Equal(got, want) {
		t.Fatalf("list order %v, want %v", got, want)
	}
	// An update moves a thread to the top.
	mustSave(t, s, rec("old", "g", runs.StatusRunning, base.Add(time.Hour)))
	if got := ids(mustList(t, s, runs.ThreadFilter{Limit: 1})); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("after an update the newest is %v, want [old]", got)
	}
}

func listFilters(t *testing.T, s runs.ThreadStore) {
	var all []runs.ThreadRecord
	graphs := []string{"alpha", "beta"}
	for i := range 12 {
		r := rec(fmt.Sprintf("t%02d", i), graphs[i%2], runs.Statuses[i%len(runs.Statuses)], base.Add(time.Duration(i)*time.Second))
		mustSave(t, s, r)
		all = append(all, r)
	}
	// expect computes a filter's answer from the fixture.
	expect := func(f runs.ThreadFilter) []string {
		var out []string
		for i := len(all) - 1; i >= 0; i-- { // newest first
			r := all[i]
			if (f.Status == "" || r.Status == f.Status) && (f.Graph == "" || r.Graph == f.Graph) {
				out = append(out, r.ID)
			}
		}
		if f.Limit > 0 && len(out) > f.Limit {
			out = out[:f.Limit]
		}
		return out
	}
	var filters []runs.ThreadFilter
	for _, st := range append([]runs.Status{""}, runs.Statuses...) {
		for _, g := range []string{"", "alpha", "beta", "gamma"} {
			for _, limit := range []int{0, 1, 2, 100} {
				filters = append(filters, runs.ThreadFilter{Status: st, Graph: g, Limit: limit})
			}
		}
	}
	for _, f := range filters {
		got := mustList(t, s, f)
		if want := ids(got); !slices.Equal(want, expect(f)) {
			t.Errorf("ListThreads(%+v) = %v, want %v", f, want, expect(f))
		}
		for _, r := range got {
			if (f.Status != "" && r.Status != f.Status) || (f.Graph != "" && r.Graph != f.Graph) {
				t.Errorf("ListThreads(%+v) returned %+v", f, r)
			}
		}
	}
	// Rows carry their fields, not just ids.
	for _, r := range mustList(t, s, runs.ThreadFilter{Graph: "beta", Limit: 1}) {
		same(t, r, all[11])
	}
}

func listLimit(t *testing.T, s runs.ThreadStore) {
	if got := mustList(t, s, runs.ThreadFilter{}); len(got) != 0 {
		t.Fatalf("a new store lists %v, want nothing", ids(got))
	}
	for i := range 5 {
		mustSave(t, s, rec(fmt.Sprintf("t%d", i), "g", runs.StatusIdle, base.Add(time.Duration(i)*time.Millisecond)))
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{0, []string{"t4", "t3", "t2", "t1", "t0"}},
		{1, []string{"t4"}},
		{3, []string{"t4", "t3", "t2"}},
		{5, []string{"t4", "t3", "t2", "t1", "t0"}},
		{6, []string{"t4", "t3", "t2", "t1", "t0"}},
	} {
		if got := ids(mustList(t, s, runs.ThreadFilter{Limit: tc.limit})); !slices.Equal(got, tc.want) {
			t.Errorf("limit %d: %v, want %v", tc.limit, got, tc.want)
		}
	}
}

func listBadFilters(t *testing.T, s runs.ThreadStore) {
	mustSave(t, s, rec("t", "g", runs.StatusIdle, base))
	for _, f := range badFilters() {
		if got, err := s.ListThreads(ctx(), f); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("ListThreads(%+v) = %v, %v; want ErrInvalidInput", f, ids(got), err)
		}
	}
}

func orphans(t *testing.T, s runs.ThreadStore) {
	owned := func(r runs.ThreadRecord, owner string) runs.ThreadRecord {
		r.Owner = owner
		r.Options.InterruptBefore = []string{"n"}
		return r
	}
	for _, r := range []runs.ThreadRecord{
		owned(rec("dead2", "g", runs.StatusRunning, base.Add(time.Second)), "gone"),
		owned(rec("dead1", "g", runs.StatusRunning, base), "gone"),
		owned(rec("live", "g", runs.StatusRunning, base), "alive"),
		owned(rec("nobody", "h", runs.StatusRunning, base.Add(2*time.Second)), ""),
		owned(rec("never", "h", runs.StatusRunning, base), "never-beat"),
		rec("i", "g", runs.StatusInterrupted, base),
		rec("d", "g", runs.StatusIdle, base),
	} {
		mustSave(t, s, r)
	}
	at := base.Add(time.Hour)
	for _, b := range []struct {
		owner string
		at    time.Time
	}{{"gone", at.Add(-time.Minute)}, {"alive", at.Add(-time.Second)}, {"alive", at.Add(-time.Hour)}} {
		// The last beat of "alive" is older than its first: beats never
		// move back.
		if err := s.Heartbeat(ctx(), b.owner, b.at); err != nil {
			t.Fatalf("Heartbeat(%q): %v", b.owner, err)
		}
	}
	got, err := s.Orphans(ctx(), at, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"dead1", "never", "dead2", "nobody"}; !slices.Equal(ids(got), want) {
		t.Fatalf("Orphans = %v, want %v (oldest first; live owners' threads left out)", ids(got), want)
	}
	same(t, got[0], mustGet(t, s, "dead1"))
	if got[0].Owner != "gone" {
		t.Errorf("an orphan's owner = %q, want it kept", got[0].Owner)
	}
	// Once the owner beats again, its threads are its own again; a wider
	// window makes a silent owner alive.
	if err := s.Heartbeat(ctx(), "gone", at); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Orphans(ctx(), at, 30*time.Second); err != nil || !slices.Equal(ids(got), []string{"never", "nobody"}) {
		t.Fatalf("Orphans after a beat = %v, %v", ids(got), err)
	}
	// A settled thread is no orphan. Settling takes only the orphan as
	// read: not after its owner or run changed, and not twice.
	r := mustGet(t, s, "nobody")
	r.Status, r.Error = runs.StatusError, "stopped"
	for _, tc := range []struct{ owner, run string }{{"someone", r.RunID}, {"", "another-run"}} {
		if ok, err := s.SettleThread(ctx(), r, tc.owner, tc.run); err != nil || ok {
			t.Fatalf("SettleThread as owner %q run %q = %v, %v; want nothing settled", tc.owner, tc.run, ok, err)
		}
	}
	if got := mustGet(t, s, "nobody"); got.Status != runs.StatusRunning {
		t.Fatalf("a refused settle changed the thread: %+v", got)
	}
	if ok, err := s.SettleThread(ctx(), r, "", r.RunID); err != nil || !ok {
		t.Fatalf("SettleThread = %v, %v; want it settled", ok, err)
	}
	same(t, mustGet(t, s, "nobody"), r)
	if ok, err := s.SettleThread(ctx(), r, "", r.RunID); err != nil || ok {
		t.Fatalf("a second SettleThread = %v, %v; want nothing (no longer running)", ok, err)
	}
	if got, err := s.Orphans(ctx(), at, 30*time.Second); err != nil || !slices.Equal(ids(got), []string{"never"}) {
		t.Fatalf("Orphans after settling one = %v, %v", ids(got), err)
	}
}

func orphansBad(t *testing.T, s runs.ThreadStore) {
	for _, tc := range []struct {
		name  string
		owner string
		at    time.Time
	}{
		{"no owner", "", base},
		{"bad owner", "a b", base},
		{"long owner", strings.Repeat("o", 129), base},
		{"no time", "o", time.Time{}},
	} {
		if err := s.Heartbeat(ctx(), tc.owner, tc.at); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("%s: Heartbeat = %v, want ErrInvalidInput", tc.name, err)
		}
	}
	if _, err := s.Orphans(ctx(), time.Time{}, time.Second); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("Orphans without a time = %v, want ErrInvalidInput", err)
	}
	if _, err := s.Orphans(ctx(), base, 0); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("Orphans without a window = %v, want ErrInvalidInput", err)
	}
	bad := rec("r", "g", runs.StatusRunning, base)
	bad.Owner = "not an owner"
	if err := s.SaveThread(ctx(), bad); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("SaveThread with a bad owner = %v, want ErrInvalidInput", err)
	}
}

func saveBad(t *testing.T, s runs.ThreadStore) {
	good := rec("ok", "g", runs.StatusIdle, base)
	many := make([]string, runs.MaxNodeNames+1)
	for i := range many {
		many[i] = "n"
	}
	for _, tc := range []struct {
		name   string
		mutate func(*runs.ThreadRecord)
		says   string
	}{
		{"empty id", func(r *runs.ThreadRecord) { r.ID = "" }, "thread id"},
		{"id with a slash", func(r *runs.ThreadRecord) { r.ID = "a/b" }, "thread id"},
		{"overlong id", func(r *runs.ThreadRecord) { r.ID = strings.Repeat("x", 129) }, "thread id"},
		// Browsers resolve these two as path steps: the thread's pages
		// could never be reached.
		{"id .", func(r *runs.ThreadRecord) { r.ID = "." }, "thread id"},
		{"id ..", func(r *runs.ThreadRecord) { r.ID = ".." }, "thread id"},
		// Only a thread that never ran has no graph.
		{"empty graph with a run", func(r *runs.ThreadRecord) { r.Graph = "" }, "graph"},
		{"overlong graph", func(r *runs.ThreadRecord) { r.Graph = strings.Repeat("g", 129) }, "graph"},
		{"unknown status", func(r *runs.ThreadRecord) { r.Status = "paused" }, "status"},
		{"empty status", func(r *runs.ThreadRecord) { r.Status = "" }, "status"},
		{"bad run id", func(r *runs.ThreadRecord) { r.RunID = "run 1" }, "run id"},
		{"overlong error", func(r *runs.ThreadRecord) { r.Error = strings.Repeat("e", runs.MaxErrorBytes+1) }, "error text"},
		{"NUL in error", func(r *runs.ThreadRecord) { r.Error = "a\x00b" }, "NUL"},
		{"bad UTF-8 in error", func(r *runs.ThreadRecord) { r.Error = "a\xffb" }, "UTF-8"},
		{"no update time", func(r *runs.ThreadRecord) { r.Updated = time.Time{} }, "update time"},
		{"empty node name", func(r *runs.ThreadRecord) { r.Before = []string{""} }, "node name"},
		{"overlong node name", func(r *runs.ThreadRecord) { r.After = []string{strings.Repeat("n", runs.MaxNodeNameBytes+1)} }, "node name"},
		{"NUL in a breakpoint", func(r *runs.ThreadRecord) { r.Options.InterruptBefore = []string{"a\x00"} }, "NUL"},
		{"too many breakpoints", func(r *runs.ThreadRecord) { r.Options.InterruptAfter = many }, "limit"},
		{"negative recursion limit", func(r *runs.ThreadRecord) { r.Options.RecursionLimit = -1 }, "recursion limit"},
		{"huge recursion limit", func(r *runs.ThreadRecord) { r.Options.RecursionLimit = runs.MaxRecursionLimit + 1 }, "recursion limit"},
	} {
		r := good
		tc.mutate(&r)
		err := s.SaveThread(ctx(), r)
		if !errors.Is(err, runs.ErrInvalidInput) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: SaveThread = %v, want ErrInvalidInput mentioning %q", tc.name, err, tc.says)
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: the error is %d bytes long; it should not echo the whole input", tc.name, len(err.Error()))
		}
	}
	if got := mustList(t, s, runs.ThreadFilter{}); len(got) != 0 {
		t.Fatalf("refused saves wrote %v", ids(got))
	}
	// The limits themselves are accepted.
	edge := good
	edge.ID, edge.Graph = strings.Repeat("i", 128), strings.Repeat("g", 128)
	edge.Error = strings.Repeat("é", runs.MaxErrorBytes/2)
	edge.After = []string{strings.Repeat("n", runs.MaxNodeNameBytes)}
	edge.Options.RecursionLimit = runs.MaxRecursionLimit
	mustSave(t, s, edge)
	same(t, mustGet(t, s, edge.ID), edge)
}

func recordsAreCopies(t *testing.T, s runs.ThreadStore) {
	r := rec("c", "g", runs.StatusInterrupted, base)
	r.Before = []string{"a"}
	r.Options.InterruptBefore = []string{"a"}
	mustSave(t, s, r)
	r.Before[0], r.Options.InterruptBefore[0] = "changed", "changed"
	got := mustGet(t, s, "c")
	if got.Before[0] != "a" || got.Options.InterruptBefore[0] != "a" {
		t.Fatalf("changing the saved record's lists changed the store: %+v", got)
	}
	got.After = append(got.After, "x")
	got.Before[0] = "y"
	if again := mustGet(t, s, "c"); again.Before[0] != "a" || again.After != nil {
		t.Fatalf("changing a read record changed the store: %+v", again)
	}
}

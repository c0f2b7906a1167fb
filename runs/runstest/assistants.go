package runstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// ExerciseAssistants runs the conformance suite of runs.AssistantStore
// against the stores newStore makes, one parallel subtest per behaviour;
// newStore is called once per subtest and must return an empty store.
//
// It covers creating (and both if_exists choices) and reading back every
// field, changes as new versions (metadata merged, config replaced),
// listing versions and making an older one current, deleting, searching
// (filters, metadata containment as jsonb's @>, every order, pages and
// the total), counting, records as copies, and the input every store
// must refuse with runs.ErrInvalidInput, writing nothing.
func ExerciseAssistants(t *testing.T, newStore func(t *testing.T) runs.AssistantStore) {
	t.Helper()
	for _, c := range assistantCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStore(t))
		})
	}
}

var assistantCases = []struct {
	name string
	run  func(t *testing.T, s runs.AssistantStore)
}{
	{"CreateThenGetReturnsEveryField", asCreateThenGet},
	{"CreateWhenTheIDIsTaken", asCreateExists},
	{"GetUnknownAndMalformed", asGetUnknown},
	{"PatchMakesANewVersion", asPatch},
	{"VersionsNewestFirstAndSetLatest", asVersions},
	{"DeleteRemovesEveryVersion", asDelete},
	{"SearchFiltersAndTotal", asSearchFilters},
	{"SearchMetadataContainment", asSearchContainment},
	{"SearchOrdersAndPages", asSearchOrders},
	{"RejectsBadInput", asRejects},
	{"RecordsAreCopies", asCopies},
}

// aid is the n-th test assistant id.
func aid(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func assistant(n int, graph, name string, at time.Time) runs.Assistant {
	return runs.Assistant{ID: aid(n), Graph: graph, Name: name, Created: at, Updated: at,
		Config: map[string]any{}, Context: map[string]any{}, Metadata: map[string]any{}}
}

// obj decodes JSON the way stores read objects back (numbers as
// json.Number).
func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := runs.DecodeAssistantObject([]byte(s))
	if err != nil {
		t.Fatalf("test JSON %s: %v", s, err)
	}
	return m
}

func mustCreate(t *testing.T, s runs.AssistantStore, a runs.Assistant) runs.Assistant {
	t.Helper()
	got, err := s.CreateAssistant(ctx(), a, runs.IfExistsRaise)
	if err != nil {
		t.Fatalf("CreateAssistant(%s): %v", a.ID, err)
	}
	return got
}

func mustGetAssistant(t *testing.T, s runs.AssistantStore, id string) runs.Assistant {
	t.Helper()
	a, err := s.GetAssistant(ctx(), id)
	if err != nil {
		t.Fatalf("GetAssistant(%s): %v", id, err)
	}
	return a
}

func mustPatch(t *testing.T, s runs.AssistantStore, id string, p runs.AssistantPatch, at time.Time) runs.Assistant {
	t.Helper()
	a, err := s.PatchAssistant(ctx(), id, p, at)
	if err != nil {
		t.Fatalf("PatchAssistant(%s): %v", id, err)
	}
	return a
}

// sameAssistant compares assistants as a client sees them: times in UTC
// to the microsecond, objects as JSON.
func sameAssistant(t *testing.T, what string, got, want runs.Assistant) {
	t.Helper()
	for _, at := range []struct {
		name     string
		got, was time.Time
	}{{"created", got.Created, want.Created}, {"updated", got.Updated, want.Updated}} {
		w := at.was.UTC().Truncate(time.Microsecond)
		if !at.got.Equal(w) || at.got.Location() != time.UTC {
			t.Errorf("%s: %s %v, want %v in UTC (kept to the microsecond)", what, at.name, at.got, w)
		}
	}
	g, w := asJSON(got), asJSON(want)
	if g != w {
		t.Errorf("%s read back as\n %s\nwant\n %s", what, g, w)
	}
}

func asJSON(a runs.Assistant) string {
	a.Created, a.Updated = time.Time{}, time.Time{}
	if a.Config == nil {
		a.Config = map[string]any{}
	}
	if a.Context == nil {
		a.Context = map[string]any{}
	}
	if a.Metadata == nil {
		a.Metadata = map[string]any{}
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func assistantIDs(as []runs.Assistant) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

func asCreateThenGet(t *testing.T, s runs.AssistantStore) {
	desc := "answers ünïcödé questions ✓"
	full := runs.Assistant{
		ID: aid(1), Graph: "agent.v2_x-y", Name: "My \"agent\"", Description: &desc,
		Config:   obj(t, `{"recursion_limit":50,"tags":["a"],"configurable":{"model":"m"}}`),
		Context:  obj(t, `{"user":{"id":7}}`),
		Metadata: obj(t, `{"created_by":"system","n":1.5,"nested":{"ok":true,"list":[1,"x",null]}}`),
		Version:  99, Created: base, Updated: base.Add(time.Second),
	}
	want := full
	want.Version = 1
	got := mustCreate(t, s, full)
	sameAssistant(t, "created", got, want)
	sameAssistant(t, "read", mustGetAssistant(t, s, full.ID), want)

	// Nil objects and no description read back as empty objects and nil.
	bare := runs.Assistant{ID: aid(2), Graph: "g", Name: "n", Created: base, Updated: base}
	got = mustCreate(t, s, bare)
	if got.Config == nil || got.Context == nil || got.Metadata == nil || got.Description != nil {
		t.Errorf("bare assistant read back as %+v, want empty objects and no description", got)
	}
	bare.Version = 1
	sameAssistant(t, "bare", mustGetAssistant(t, s, bare.ID), bare)
}

func asCreateExists(t *testing.T, s runs.AssistantStore) {
	first := assistant(1, "g", "first", base)
	mustCreate(t, s, first)
	second := assistant(1, "other", "second", base.Add(time.Hour))
	if _, err := s.CreateAssistant(ctx(), second, runs.IfExistsRaise); !errors.Is(err, runs.ErrAssistantExists) {
		t.Errorf("create a taken id with raise: %v, want ErrAssistantExists", err)
	}
	if _, err := s.CreateAssistant(ctx(), second, ""); !errors.Is(err, runs.ErrAssistantExists) {
		t.Errorf("create a taken id with no choice: %v, want ErrAssistantExists (raise is the default)", err)
	}
	got, err := s.CreateAssistant(ctx(), second, runs.IfExistsDoNothing)
	if err != nil {
		t.Fatalf("create a taken id with do_nothing: %v", err)
	}
	first.Version = 1
	sameAssistant(t, "do_nothing", got, first)
	sameAssistant(t, "after do_nothing", mustGetAssistant(t, s, first.ID), first)
	// do_nothing on a free id creates.
	third := assistant(3, "g", "third", base)
	if got, err := s.CreateAssistant(ctx(), third, runs.IfExistsDoNothing); err != nil || got.ID != third.ID || got.Version != 1 {
		t.Errorf("do_nothing on a free id: %+v, %v; want it created", got, err)
	}
}

func asGetUnknown(t *testing.T, s runs.AssistantStore) {
	if _, err := s.GetAssistant(ctx(), aid(404)); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("get unknown: %v, want ErrUnknownAssistant", err)
	}
	for _, id := range []string{"", "agent", "00000000-0000-4000-8000-00000000000G", "00000000-0000-4000-8000-00000000000A", "{00000000-0000-4000-8000-000000000001}"} {
		if _, err := s.GetAssistant(ctx(), id); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("get %q: %v, want ErrInvalidInput", id, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func asPatch(t *testing.T, s runs.AssistantStore) {
	a := assistant(1, "g", "before", base)
	a.Config = obj(t, `{"tags":["x"]}`)
	a.Context = obj(t, `{"c":1}`)
	a.Metadata = obj(t, `{"keep":1,"change":"old"}`)
	mustCreate(t, s, a)

	at := base.Add(time.Minute)
	got := mustPatch(t, s, a.ID, runs.AssistantPatch{
		Name: ptr("after"), Description: ptr("now described"),
		Config:   obj(t, `{"recursion_limit":5}`),
		Metadata: obj(t, `{"change":"new","added":[1]}`),
	}, at)
	want := a
	want.Name, want.Description, want.Version, want.Updated = "after", ptr("now described"), 2, at
	want.Config = obj(t, `{"recursion_limit":5}`)
	want.Metadata = obj(t, `{"keep":1,"change":"new","added":[1]}`)
	sameAssistant(t, "patched", got, want)
	sameAssistant(t, "read after patch", mustGetAssistant(t, s, a.ID), want)

	// An empty patch still makes a version; a graph change is kept.
	at2 := at.Add(time.Minute)
	got = mustPatch(t, s, a.ID, runs.AssistantPatch{Graph: ptr("g2")}, at2)
	want.Graph, want.Version, want.Updated = "g2", 3, at2
	sameAssistant(t, "graph patch", got, want)

	if _, err := s.PatchAssistant(ctx(), aid(404), runs.AssistantPatch{Name: ptr("x")}, at); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("patch unknown: %v, want ErrUnknownAssistant", err)
	}
}

func asVersions(t *testing.T, s runs.AssistantStore) {
	a := assistant(1, "g", "v1", base)
	a.Metadata = obj(t, `{"tag":"one"}`)
	mustCreate(t, s, a)
	t2, t3, t4 := base.Add(time.Minute), base.Add(2*time.Minute), base.Add(3*time.Minute)
	mustPatch(t, s, a.ID, runs.AssistantPatch{Name: ptr("v2"), Metadata: obj(t, `{"tag":"two"}`)}, t2)

	vs, err := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 || vs[0].Name != "v2" || vs[1].Name != "v1" {
		t.Fatalf("versions = %+v, want v2 then v1", vs)
	}
	if !vs[0].Updated.Equal(runs.Stamp(t2)) || !vs[1].Updated.Equal(runs.Stamp(base)) {
		t.Errorf("versions made at %v and %v, want %v and %v", vs[0].Updated, vs[1].Updated, t2, base)
	}
	if vs, _ := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{Metadata: obj(t, `{"tag":"one"}`)}); len(vs) != 1 || vs[0].Version != 1 {
		t.Errorf("versions with tag one = %+v, want version 1", vs)
	}
	if vs, _ := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{Limit: 1, Offset: 1}); len(vs) != 1 || vs[0].Version != 1 {
		t.Errorf("versions limit 1 offset 1 = %+v, want version 1", vs)
	}
	if vs, err := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{Offset: 5}); err != nil || len(vs) != 0 {
		t.Errorf("versions past the end = %+v, %v; want none", vs, err)
	}

	// Version 1 made current again: its fields, the current time.
	got, err := s.SetLatestVersion(ctx(), a.ID, 1, t3)
	if err != nil {
		t.Fatal(err)
	}
	want := a
	want.Version, want.Updated = 1, t3
	sameAssistant(t, "latest 1", got, want)
	sameAssistant(t, "read after latest 1", mustGetAssistant(t, s, a.ID), want)

	// The next change numbers after the highest version, not the current.
	if got := mustPatch(t, s, a.ID, runs.AssistantPatch{Name: ptr("v3")}, t4); got.Version != 3 || got.Metadata["tag"] != "one" {
		t.Errorf("patch after latest 1 = %+v, want version 3 made from version 1", got)
	}
	for _, v := range []int{0, 4, -1} {
		if _, err := s.SetLatestVersion(ctx(), a.ID, v, t4); !errors.Is(err, runs.ErrUnknownAssistant) {
			t.Errorf("latest %d: %v, want ErrUnknownAssistant", v, err)
		}
	}
	if _, err := s.SetLatestVersion(ctx(), aid(404), 1, t4); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("latest of unknown: %v, want ErrUnknownAssistant", err)
	}
	if _, err := s.AssistantVersions(ctx(), aid(404), runs.VersionQuery{}); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("versions of unknown: %v, want ErrUnknownAssistant", err)
	}
}

func asDelete(t *testing.T, s runs.AssistantStore) {
	a := assistant(1, "g", "n", base)
	mustCreate(t, s, a)
	mustPatch(t, s, a.ID, runs.AssistantPatch{Name: ptr("m")}, base.Add(time.Second))
	mustCreate(t, s, assistant(2, "g", "kept", base))
	if err := s.DeleteAssistant(ctx(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAssistant(ctx(), a.ID); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("get deleted: %v, want ErrUnknownAssistant", err)
	}
	if _, err := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{}); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("versions of deleted: %v, want ErrUnknownAssistant", err)
	}
	if err := s.DeleteAssistant(ctx(), a.ID); !errors.Is(err, runs.ErrUnknownAssistant) {
		t.Errorf("delete again: %v, want ErrUnknownAssistant", err)
	}
	// The id is free again, starting at version 1.
	if got := mustCreate(t, s, a); got.Version != 1 {
		t.Errorf("recreated at version %d, want 1", got.Version)
	}
	if vs, _ := s.AssistantVersions(ctx(), a.ID, runs.VersionQuery{}); len(vs) != 1 {
		t.Errorf("recreated assistant has %d versions, want 1", len(vs))
	}
	mustGetAssistant(t, s, aid(2))
}

func search(t *testing.T, s runs.AssistantStore, q runs.AssistantQuery) ([]string, int) {
	t.Helper()
	as, total, err := s.SearchAssistants(ctx(), q)
	if err != nil {
		t.Fatalf("SearchAssistants(%+v): %v", q, err)
	}
	n, err := s.CountAssistants(ctx(), q)
	if err != nil || n != total {
		t.Errorf("CountAssistants(%+v) = %d, %v; the search's total is %d", q, n, err, total)
	}
	return assistantIDs(as), total
}

func asSearchFilters(t *testing.T, s runs.AssistantStore) {
	for i, g := range []string{"a", "a", "b", "b", "b"} {
		x := assistant(i+1, g, fmt.Sprintf("n%d", i%2), base.Add(time.Duration(i)*time.Second))
		if i < 3 {
			x.Metadata = obj(t, `{"created_by":"system"}`)
		}
		mustCreate(t, s, x)
	}
	for _, c := range []struct {
		q     runs.AssistantQuery
		want  []string
		total int
	}{
		{runs.AssistantQuery{}, []string{aid(1), aid(2), aid(3), aid(4), aid(5)}, 5},
		{runs.AssistantQuery{Graph: "b"}, []string{aid(3), aid(4), aid(5)}, 3},
		{runs.AssistantQuery{Name: "n1"}, []string{aid(2), aid(4)}, 2},
		{runs.AssistantQuery{Graph: "b", Name: "n0"}, []string{aid(3), aid(5)}, 2},
		{runs.AssistantQuery{Metadata: obj(t, `{"created_by":"system"}`)}, []string{aid(1), aid(2), aid(3)}, 3},
		{runs.AssistantQuery{Metadata: obj(t, `{"created_by":"system"}`), Limit: 2, Offset: 1}, []string{aid(2), aid(3)}, 3},
		{runs.AssistantQuery{Limit: 2, Offset: 4}, []string{aid(5)}, 5},
		{runs.AssistantQuery{Offset: 9}, []string{}, 5},
		{runs.AssistantQuery{Graph: "zzz"}, []string{}, 0},
		{runs.AssistantQuery{Metadata: map[string]any{}}, []string{aid(1), aid(2), aid(3), aid(4), aid(5)}, 5},
	} {
		got, total := search(t, s, c.q)
		if !slices.Equal(got, c.want) || total != c.total {
			t.Errorf("search %+v = %v (total %d), want %v (total %d)", c.q, got, total, c.want, c.total)
		}
	}
}

func asSearchContainment(t *testing.T, s runs.AssistantStore) {
	docs := []string{
		`{"a":1,"tags":["x","y"],"o":{"p":{"q":true},"r":null}}`,
		`{"a":1.0,"tags":["y"],"o":{"p":{"q":false}}}`,
		`{"a":"1","tags":"x"}`,
	}
	for i, d := range docs {
		x := assistant(i+1, "g", "n", base.Add(time.Duration(i)*time.Second))
		x.Metadata = obj(t, d)
		mustCreate(t, s, x)
	}
	for _, c := range []struct {
		filter string
		want   []string
	}{
		{`{"a":1}`, []string{aid(1), aid(2)}},
		{`{"a":"1"}`, []string{aid(3)}},
		{`{"tags":["x"]}`, []string{aid(1)}},
		{`{"tags":["y","x"]}`, []string{aid(1)}},
		{`{"tags":[]}`, []string{aid(1), aid(2)}},
		{`{"tags":"x"}`, []string{aid(3)}},
		{`{"o":{"p":{"q":true}}}`, []string{aid(1)}},
		{`{"o":{"p":{}}}`, []string{aid(1), aid(2)}},
		{`{"o":{"r":null}}`, []string{aid(1)}},
		{`{"missing":null}`, []string{}},
	} {
		got, _ := search(t, s, runs.AssistantQuery{Metadata: obj(t, c.filter)})
		if !slices.Equal(got, c.want) {
			t.Errorf("metadata %s selects %v, want %v", c.filter, got, c.want)
		}
	}
}

func asSearchOrders(t *testing.T, s runs.AssistantStore) {
	// ids 1..4; graphs, names and times chosen so every order differs and
	// ties fall back to the id.
	rows := []struct {
		graph, name      string
		created, updated int
	}{
		{"b", "Zed", 2, 1},
		{"a", "alpha", 1, 3},
		{"b", "Beta", 2, 2},
		{"a", "alpha", 3, 0},
	}
	for i, r := range rows {
		x := assistant(i+1, r.graph, r.name, base.Add(time.Duration(r.created)*time.Second))
		x.Updated = base.Add(time.Duration(r.updated) * time.Second)
		mustCreate(t, s, x)
	}
	for _, c := range []struct {
		sort runs.AssistantSort
		asc  []int
	}{
		{"", []int{2, 1, 3, 4}},
		{runs.SortByCreatedAt, []int{2, 1, 3, 4}},
		{runs.SortByUpdatedAt, []int{4, 1, 3, 2}},
		{runs.SortByAssistantID, []int{1, 2, 3, 4}},
		{runs.SortByGraphID, []int{2, 4, 1, 3}},
		// Bytewise: upper case first.
		{runs.SortByName, []int{3, 1, 2, 4}},
	} {
		var want []string
		for _, n := range c.asc {
			want = append(want, aid(n))
		}
		if got, _ := search(t, s, runs.AssistantQuery{SortBy: c.sort}); !slices.Equal(got, want) {
			t.Errorf("sort by %q ascending = %v, want %v", c.sort, got, want)
		}
		slices.Reverse(want)
		if got, _ := search(t, s, runs.AssistantQuery{SortBy: c.sort, Desc: true}); !slices.Equal(got, want) {
			t.Errorf("sort by %q descending = %v, want %v", c.sort, got, want)
		}
		if got, total := search(t, s, runs.AssistantQuery{SortBy: c.sort, Desc: true, Limit: 2, Offset: 1}); !slices.Equal(got, want[1:3]) || total != 4 {
			t.Errorf("sort by %q descending, page 2 of 1 = %v (total %d), want %v (total 4)", c.sort, got, total, want[1:3])
		}
	}
}

func asRejects(t *testing.T, s runs.AssistantStore) {
	good := assistant(1, "g", "n", base)
	bad := map[string]func(a *runs.Assistant){
		"id not a uuid":        func(a *runs.Assistant) { a.ID = "agent" },
		"id upper case":        func(a *runs.Assistant) { a.ID = "00000000-0000-4000-8000-00000000000A" },
		"graph empty":          func(a *runs.Assistant) { a.Graph = "" },
		"graph with a slash":   func(a *runs.Assistant) { a.Graph = "a/b" },
		"name empty":           func(a *runs.Assistant) { a.Name = "" },
		"name with NUL":        func(a *runs.Assistant) { a.Name = "a\x00b" },
		"name too long":        func(a *runs.Assistant) { a.Name = string(make([]byte, runs.MaxAssistantNameBytes+1)) },
		"description bad utf8": func(a *runs.Assistant) { a.Description = ptr("\xff") },
		"metadata with NUL":    func(a *runs.Assistant) { a.Metadata = map[string]any{"k": "a\x00"} },
		"config not JSON":      func(a *runs.Assistant) { a.Config = map[string]any{"f": func() {}} },
		"no creation time":     func(a *runs.Assistant) { a.Created = time.Time{} },
		"no update time":       func(a *runs.Assistant) { a.Updated = time.Time{} },
	}
	for what, change := range bad {
		a := good
		change(&a)
		if _, err := s.CreateAssistant(ctx(), a, runs.IfExistsRaise); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("create with %s: %v, want ErrInvalidInput", what, err)
		}
	}
	if _, err := s.CreateAssistant(ctx(), good, "replace"); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("create with if_exists replace: %v, want ErrInvalidInput", err)
	}
	if n, _ := s.CountAssistants(ctx(), runs.AssistantQuery{}); n != 0 {
		t.Fatalf("%d assistants after refused creates, want 0", n)
	}
	mustCreate(t, s, good)
	for what, p := range map[string]runs.AssistantPatch{
		"graph":       {Graph: ptr("")},
		"name":        {Name: ptr("")},
		"metadata":    {Metadata: map[string]any{"k": "\x00"}},
		"description": {Description: ptr("a\x00")},
	} {
		if _, err := s.PatchAssistant(ctx(), good.ID, p, base.Add(time.Second)); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("patch bad %s: %v, want ErrInvalidInput", what, err)
		}
	}
	if _, err := s.PatchAssistant(ctx(), good.ID, runs.AssistantPatch{}, time.Time{}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("patch without a time: %v, want ErrInvalidInput", err)
	}
	if _, err := s.SetLatestVersion(ctx(), good.ID, 1, time.Time{}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("latest without a time: %v, want ErrInvalidInput", err)
	}
	if got := mustGetAssistant(t, s, good.ID); got.Version != 1 || got.Name != "n" {
		t.Errorf("after refused patches: %+v, want version 1 unchanged", got)
	}
	for what, q := range map[string]runs.AssistantQuery{
		"sort":      {SortBy: "rank"},
		"limit":     {Limit: -1},
		"big limit": {Limit: runs.MaxAssistantPage + 1},
		"offset":    {Offset: -1},
		"graph":     {Graph: "a b"},
		"metadata":  {Metadata: map[string]any{"k": "\x00"}},
	} {
		if _, _, err := s.SearchAssistants(ctx(), q); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("search with bad %s: %v, want ErrInvalidInput", what, err)
		}
		if _, err := s.CountAssistants(ctx(), q); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("count with bad %s: %v, want ErrInvalidInput", what, err)
		}
	}
	if _, err := s.AssistantVersions(ctx(), good.ID, runs.VersionQuery{Limit: -1}); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("versions with limit -1: %v, want ErrInvalidInput", err)
	}
	for _, id := range []string{"x", ""} {
		if err := s.DeleteAssistant(ctx(), id); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("delete %q: %v, want ErrInvalidInput", id, err)
		}
		if _, err := s.AssistantVersions(ctx(), id, runs.VersionQuery{}); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("versions of %q: %v, want ErrInvalidInput", id, err)
		}
	}
}

func asCopies(t *testing.T, s runs.AssistantStore) {
	a := assistant(1, "g", "n", base)
	a.Metadata = obj(t, `{"k":"v","nested":{"x":1}}`)
	got := mustCreate(t, s, a)
	a.Metadata["k"] = "changed by the caller"
	got.Metadata["k"] = "changed by the reader"
	got.Metadata["nested"].(map[string]any)["x"] = 2
	read := mustGetAssistant(t, s, a.ID)
	if !reflect.DeepEqual(read.Metadata, obj(t, `{"k":"v","nested":{"x":1}}`)) {
		t.Errorf("metadata read back as %v after callers changed their copies", read.Metadata)
	}
}

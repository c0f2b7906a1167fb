package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
)

// finishedFlow runs the flow graph to its end on thread and returns its
// checkpoints, newest first.
func finishedFlow(t *testing.T, f *fixture, thread string) []*engine.StateSnapshot {
	t.Helper()
	close(f.gate.release)
	if res := f.post(t, "/graphs/flow/runs", url.Values{"thread": {thread}}); res.code != http.StatusSeeOther {
		t.Fatalf("start = %d: %.300s", res.code, res.body)
	}
	f.wait(t, thread)
	return f.history(t, "flow", thread)
}

func (f *fixture) history(t *testing.T, graph, thread string) []*engine.StateSnapshot {
	t.Helper()
	g, err := f.runs.Graph(graph)
	if err != nil {
		t.Fatal(err)
	}
	h, err := g.Pregel().GetStateHistory(context.Background(), checkpoints.Config{ThreadID: thread}, engine.HistoryOptions{MetadataOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// atStep finds the checkpoint of the first run at step.
func atStep(t *testing.T, h []*engine.StateSnapshot, step int) string {
	t.Helper()
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Metadata.Step == step {
			return h[i].Config.CheckpointID
		}
	}
	t.Fatalf("no checkpoint at step %d", step)
	return ""
}

var rowRE = regexp.MustCompile(`<tr id="ck-([^"]+)" class="([^"]+)"`)

// treeRows reads the tree's rows from a page: id → class.
func treeRows(body string) (ids []string, class map[string]string) {
	class = map[string]string{}
	for _, m := range rowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
		class[m[1]] = m[2]
	}
	return ids, class
}

func TestCheckpointTreeShowsForksAsBranchesAndMarksTheHead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "tree")
	old := atStep(t, h, 0)
	fork, err := f.runs.UpdateState(context.Background(), "tree", old, map[string]any{"n": 7}, "fetch")
	if err != nil {
		t.Fatal(err)
	}
	res := f.get(t, "/threads/tree/checkpoints")
	if res.code != http.StatusOK {
		t.Fatalf("GET tree = %d", res.code)
	}
	ids, class := treeRows(res.body)
	if len(ids) != len(h)+1 {
		t.Fatalf("tree has %d rows, want %d checkpoints", len(ids), len(h)+1)
	}
	if !strings.Contains(class[fork], "head") || !strings.Contains(class[fork], "fork") || !strings.Contains(class[fork], "depth-1") {
		t.Errorf("the fork's row class = %q; want head, fork, depth-1", class[fork])
	}
	if ids[0] != h[len(h)-1].Config.CheckpointID {
		t.Errorf("the tree does not start at the oldest checkpoint")
	}
	// The old head is no longer the head but stays in lane 0.
	if c := class[h[0].Config.CheckpointID]; strings.Contains(c, " head") || !strings.Contains(c, "depth-0") {
		t.Errorf("old head row class = %q", c)
	}
	if !strings.Contains(res.body, `data-head="`+fork+`"`) {
		t.Error("the page does not name the head")
	}
	// The thread page links here.
	if th := f.get(t, "/threads/tree"); !strings.Contains(th.body, `href="/threads/tree/checkpoints"`) {
		t.Error("the thread page does not link to the checkpoint tree")
	}
}

func TestCheckpointTreePages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "paged")
	res := f.get(t, "/threads/paged/checkpoints?limit=2")
	ids, _ := treeRows(res.body)
	if len(ids) != 2 || ids[1] != h[0].Config.CheckpointID {
		t.Fatalf("first page = %v, want the newest two", ids)
	}
	older := h[1].Config.CheckpointID
	if !strings.Contains(res.body, `href="/threads/paged/checkpoints?before=`+older+`&amp;limit=2" id="older"`) {
		t.Fatalf("no older-page link: %.3000s", res.body)
	}
	res = f.get(t, "/threads/paged/checkpoints?before="+older+"&limit=2")
	ids, class := treeRows(res.body)
	if len(ids) == 0 || ids[len(ids)-1] != h[2].Config.CheckpointID {
		t.Fatalf("second page = %v", ids)
	}
	if strings.Contains(strings.Join(ids, " "), h[0].Config.CheckpointID) {
		t.Fatal("the second page repeats the first")
	}
	for _, id := range ids {
		if strings.Contains(class[id], " head") {
			t.Errorf("row %s on an older page is marked head", id)
		}
	}
	if !strings.Contains(res.body, `data-head="`+h[0].Config.CheckpointID+`"`) {
		t.Error("an older page does not name the head")
	}
}

func TestCheckpointDetailTruncatesLargeValues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	finishedFlow(t, f, "big")
	big := strings.Repeat("x", 50<<10)
	id, err := f.runs.UpdateState(context.Background(), "big", "", map[string]any{"answer": big + "<b>end</b>"}, "slow")
	if err != nil {
		t.Fatal(err)
	}
	res := f.get(t, "/threads/big/checkpoints/"+id)
	if res.code != http.StatusOK {
		t.Fatalf("GET = %d: %.500s", res.code, res.body)
	}
	if len(res.body) > 30<<10 {
		t.Errorf("the page is %d bytes for a 50 KB value; want it cut", len(res.body))
	}
	valueURL := "/threads/big/checkpoints/" + id + "/values/answer"
	for _, want := range []string{`class="expand"`, `href="` + valueURL + `"`, `id="next"`, `id="versions"`, `<code>log</code>`, `source <strong>update</strong>`, `value="fetch"`, `value="slow"`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("detail lacks %q", want)
		}
	}
	if strings.Contains(res.body, `value="__start__"`) {
		t.Error("the as-node picker offers __start__")
	}
	full := f.get(t, valueURL)
	if full.code != http.StatusOK || !strings.Contains(full.body, big+"<b>end</b>") {
		t.Fatalf("full value = %d, %d bytes", full.code, len(full.body))
	}
}

func TestTimeTravelRoutesRefuseBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "bad")
	id := h[0].Config.CheckpointID
	ghost := "1f000000-0000-7000-8000-000000000000"
	for _, tc := range []struct {
		name string
		get  string
		code int
		want string
	}{
		{"unknown checkpoint", "/threads/bad/checkpoints/" + ghost, 404, "unknown checkpoint"},
		{"not a checkpoint id", "/threads/bad/checkpoints/a%20b", 400, "not a checkpoint id"},
		{"unknown thread", "/threads/ghost/checkpoints", 404, "unknown thread"},
		{"bad limit", "/threads/bad/checkpoints?limit=0", 400, "limit"},
		{"bad cursor", "/threads/bad/checkpoints?before=%3Cx%3E", 400, "not a checkpoint id"},
		{"unknown key", "/threads/bad/checkpoints/" + id + "/values/nope", 404, "nope"},
		{"value of unknown checkpoint", "/threads/bad/checkpoints/" + ghost + "/values/n", 404, "unknown checkpoint"},
		{"diff without b", "/threads/bad/diff?a=" + id, 400, "pick two"},
		{"diff of unknown checkpoint", "/threads/bad/diff?a=" + id + "&b=" + ghost, 404, "unknown checkpoint"},
	} {
		res := f.get(t, tc.get)
		if res.code != tc.code || !strings.Contains(res.body, tc.want) {
			t.Errorf("%s: %d, want %d saying %q: %.300s", tc.name, res.code, tc.code, tc.want, res.body)
		}
	}
}

func TestDiffShowsAddedRemovedAndChangedKeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "diff")
	first, last := h[len(h)-1].Config.CheckpointID, h[0].Config.CheckpointID
	res := f.get(t, "/threads/diff/diff?a="+first+"&b="+last)
	if res.code != http.StatusOK {
		t.Fatalf("diff = %d: %.500s", res.code, res.body)
	}
	// The input checkpoint holds an empty log; the last holds both
	// entries: one line per added element.
	if !strings.Contains(res.body, `id="diff-log" class="diff changed"`) || !strings.Contains(res.body, "+ log[0]: &#34;fetch&#34;\n+ log[1]: &#34;slow&#34;") {
		t.Errorf("diff lacks the grown log: %.3000s", res.body)
	}
	back := f.get(t, "/threads/diff/diff?a="+last+"&b="+first)
	if !strings.Contains(back.body, "- log[0]: &#34;fetch&#34;") {
		t.Error("the reverse diff does not show the log's entries removed")
	}
	same := f.get(t, "/threads/diff/diff?a="+last+"&b="+last)
	if !strings.Contains(same.body, `id="no-diff"`) {
		t.Error("a checkpoint diffed with itself shows changes")
	}
}

func TestDiffValuesLinePerChangedPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b map[string]any
		want []string // "key kind: lines"
	}{
		{"scalar changed", map[string]any{"n": 1}, map[string]any{"n": 2}, []string{"n changed: ~ n: 1 → 2"}},
		{"list grew", map[string]any{"l": []string{"a"}}, map[string]any{"l": []string{"a", "b"}}, []string{`l changed: + l[1]: "b"`}},
		{"nested field", map[string]any{"o": map[string]any{"x": 1, "y": true}}, map[string]any{"o": map[string]any{"x": 2, "z": "new"}},
			[]string{`o changed: ~ o.x: 1 → 2|- o.y: true|+ o.z: "new"`}},
		{"added and removed", map[string]any{"gone": 1}, map[string]any{"new": "v"}, []string{`gone removed: - gone: 1`, `new added: + new: "v"`}},
		{"typed equals JSON", map[string]any{"l": []string{"a"}}, map[string]any{"l": []any{"a"}}, nil},
	} {
		rows, _ := handlers.DiffValues(tc.a, tc.b)
		var got []string
		for _, r := range rows {
			got = append(got, r.Key+" "+r.Kind+": "+strings.Join(r.Lines, "|"))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestTreeRowsLanes(t *testing.T) {
	t.Parallel()
	snap := func(id, parent string) *engine.StateSnapshot {
		s := &engine.StateSnapshot{Config: checkpoints.Config{ThreadID: "t", CheckpointID: id}}
		if parent != "" {
			s.ParentConfig = &checkpoints.Config{ThreadID: "t", CheckpointID: parent}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		page []*engine.StateSnapshot // newest first
		head string
		want string // id:depth[f][h] in display order
	}{
		{"linear", []*engine.StateSnapshot{snap("c", "b"), snap("b", "a"), snap("a", "")}, "c", "a:0 b:0 c:0h"},
		{"fork of the root", []*engine.StateSnapshot{snap("d", "a"), snap("c", "b"), snap("b", "a"), snap("a", "")}, "d", "a:0 b:0 c:0 d:1fh"},
		{"fork of a fork", []*engine.StateSnapshot{snap("e", "d"), snap("f", "b"), snap("d", "b"), snap("c", "b"), snap("b", "a"), snap("a", "")}, "e",
			"a:0 b:0 c:0 d:1f e:1h f:1f"},
		{"parent on an older page", []*engine.StateSnapshot{snap("z", "y"), snap("y", "x")}, "z", "y:0^ z:0h"},
	} {
		var got []string
		for _, r := range handlers.TreeRows(tc.page, tc.head, "") {
			s := fmt.Sprintf("%s:%d", r.ID, r.Depth)
			if r.Fork {
				s += "f"
			}
			if r.Head {
				s += "h"
			}
			if r.ParentOffPage {
				s += "^"
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, strings.Join(got, " "), tc.want)
		}
	}
}

func TestEditAndForkACheckpoint(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "edit")
	old := atStep(t, h, 0)
	path := "/threads/edit/checkpoints/" + old + "/update"
	before := len(f.history(t, "flow", "edit"))
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"bad JSON", url.Values{"key": {"n"}, "value": {"{"}, "as_node": {"fetch"}}, "bad JSON"},
		{"wrong type", url.Values{"key": {"n"}, "value": {`"many"`}, "as_node": {"fetch"}}, "which holds int"},
		{"unknown key", url.Values{"key": {"nope"}, "value": {"1"}, "as_node": {"fetch"}}, "unknown state key"},
		{"unknown node", url.Values{"key": {"n"}, "value": {"1"}, "as_node": {"ghost"}}, "ghost"},
		{"no key", url.Values{"value": {"1"}}, "no state key"},
	} {
		res := f.post(t, path, tc.form)
		if res.code != http.StatusBadRequest || !strings.Contains(res.body, tc.want) || !strings.Contains(res.body, `id="edit-error"`) {
			t.Errorf("%s: %d, want 400 saying %q on the form: %.400s", tc.name, res.code, tc.want, res.body)
		}
	}
	if after := len(f.history(t, "flow", "edit")); after != before {
		t.Fatalf("refused edits wrote %d checkpoints", after-before)
	}
	res := f.post(t, path, url.Values{"key": {"n"}, "value": {"41"}, "as_node": {"fetch"}})
	if res.code != http.StatusSeeOther || !strings.HasPrefix(res.location, "/threads/edit/checkpoints/") {
		t.Fatalf("fork = %d to %q: %.400s", res.code, res.location, res.body)
	}
	page := f.get(t, res.location)
	id := strings.TrimPrefix(res.location, "/threads/edit/checkpoints/")
	_, class := treeRows(page.body)
	if !strings.Contains(class[id], "selected") || !strings.Contains(class[id], "fork") || !strings.Contains(class[id], "head") {
		t.Fatalf("the new checkpoint's row = %q; want selected, fork, head", class[id])
	}
	if v := f.values(t, "flow", "edit"); v["n"] != 41 {
		t.Fatalf("head n = %v", v["n"])
	}
	if res := f.post(t, "/threads/edit/checkpoints/1f000000-0000-7000-8000-000000000000/update", url.Values{"key": {"n"}, "value": {"1"}}); res.code != http.StatusNotFound {
		t.Errorf("edit of an unknown checkpoint = %d", res.code)
	}
}

func TestRerunAndContinue(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "rerun")
	beforeSlow := atStep(t, h, 1)
	res := f.post(t, "/threads/rerun/checkpoints/"+beforeSlow+"/rerun", nil)
	if res.code != http.StatusSeeOther || res.location != "/threads/rerun" {
		t.Fatalf("rerun = %d to %q: %.300s", res.code, res.location, res.body)
	}
	f.wait(t, "rerun")
	if v := f.values(t, "flow", "rerun"); fmt.Sprint(v["log"]) != "[fetch slow]" {
		t.Fatalf("log after re-running slow = %v", v["log"])
	}
	if n := len(f.history(t, "flow", "rerun")); n <= len(h) {
		t.Fatalf("the re-run wrote no checkpoints (%d ≤ %d)", n, len(h))
	}
	// The re-run ended: its head plans nothing, so continuing is refused
	// with the reason; after an edit at its end there is a task again.
	res = f.post(t, "/threads/rerun/continue", nil)
	if res.code != http.StatusConflict || !strings.Contains(res.body, "nothing to run: the head has no next tasks") {
		t.Fatalf("continue at the end = %d: %.300s", res.code, res.body)
	}
	if _, err := f.runs.UpdateState(context.Background(), "rerun", "", map[string]any{"n": 2}, "fetch"); err != nil {
		t.Fatal(err)
	}
	res = f.post(t, "/threads/rerun/continue", nil)
	if res.code != http.StatusSeeOther {
		t.Fatalf("continue after an edit as fetch = %d: %.300s", res.code, res.body)
	}
	f.wait(t, "rerun")
	if res := f.post(t, "/threads/rerun/checkpoints/1f000000-0000-7000-8000-000000000000/rerun", nil); res.code != http.StatusNotFound {
		t.Errorf("rerun of an unknown checkpoint = %d", res.code)
	}
	if res := f.post(t, "/threads/ghost/continue", nil); res.code != http.StatusNotFound {
		t.Errorf("continue of an unknown thread = %d", res.code)
	}
}

func TestTimeTravelOnABusyThreadIs409(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if res := f.post(t, "/graphs/flow/runs", url.Values{"thread": {"busy"}}); res.code != http.StatusSeeOther {
		t.Fatalf("start = %d", res.code)
	}
	<-f.gate.entered
	id := f.history(t, "flow", "busy")[0].Config.CheckpointID
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/threads/busy/checkpoints/" + id + "/update", url.Values{"key": {"n"}, "value": {"1"}, "as_node": {"fetch"}}},
		{"/threads/busy/checkpoints/" + id + "/rerun", nil},
		{"/threads/busy/continue", nil},
	} {
		if res := f.post(t, tc.path, tc.form); res.code != http.StatusConflict {
			t.Errorf("POST %s while running = %d, want 409: %.300s", tc.path, res.code, res.body)
		}
	}
	close(f.gate.release)
	f.wait(t, "busy")
}

// A checkpoint whose values no longer fit the graph's state type (saved by
// an older version of the graph) does not take the tree page down: the
// tree lists it, and only its own page reports the problem.
func TestCheckpointTreeListsACheckpointItCannotRead(t *testing.T) {
	t.Parallel()
	f := setup(t)
	h := finishedFlow(t, f, "unreadable")
	g, err := f.runs.Graph("flow")
	if err != nil {
		t.Fatal(err)
	}
	head := h[0].Config
	bad := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(),
		ChannelValues:   map[string]json.RawMessage{"answer": json.RawMessage(`5`)},
		ChannelVersions: map[string]int64{"answer": 99},
		VersionsSeen:    map[string]map[string]int64{}}
	md := checkpoints.Metadata{Source: checkpoints.SourceUpdate, Step: 9, Parents: map[string]string{}}
	if _, err := g.Pregel().Checkpointer().Put(context.Background(), head, bad, md, map[string]int64{"answer": 99}); err != nil {
		t.Fatal(err)
	}
	res := f.get(t, "/threads/unreadable/checkpoints")
	if res.code != http.StatusOK {
		t.Fatalf("tree page = %d: %.300s", res.code, res.body)
	}
	if ids, _ := treeRows(res.body); len(ids) != len(h)+1 {
		t.Fatalf("tree rows %v, want the %d readable checkpoints and the unreadable one", ids, len(h))
	}
	if res := f.get(t, "/threads/unreadable/checkpoints/"+bad.ID); res.code != http.StatusUnprocessableEntity || !strings.Contains(res.body, `channel &#34;answer&#34;`) {
		t.Fatalf("the unreadable checkpoint's page = %d: %.3000s; want 422 naming the channel", res.code, res.body)
	}
}

package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

func TestPathKeyReadsLikeCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base, key, want string
	}{
		{"", "messages", "messages"},
		{"messages[2]", "content", "messages[2].content"},
		{"plan", "steps", "plan.steps"},
		{"", "odd key", `["odd key"]`},
		{"o", "odd key", `o["odd key"]`},
		{"o", "a.b", `o["a.b"]`},
		{"o", `say "hi"`, `o["say \"hi\""]`},
		{"o", `back\slash`, `o["back\\slash"]`},
		{"o", "line\nbreak", `o["line\nbreak"]`},
		{"o", "", `o[""]`},
		{"o", "2nd", `o["2nd"]`},
		{"o", "x2_y", "o.x2_y"},
		{"o", "<b>", `o["<b>"]`},
		{"o", "café", `o["café"]`},
		{"o", "]", `o["]"]`},
	} {
		if got := handlers.PathKey(tc.base, tc.key); got != tc.want {
			t.Errorf("PathKey(%q, %q) = %s, want %s", tc.base, tc.key, got, tc.want)
		}
	}
}

func TestDiffLinesUseReadablePaths(t *testing.T) {
	t.Parallel()
	a := map[string]any{
		"messages": []any{map[string]any{"content": "hi"}, map[string]any{"content": "yo"}, map[string]any{"content": "old"}},
		"plan":     map[string]any{"steps": []any{"a"}, "odd key": 1},
	}
	b := map[string]any{
		"messages":   []any{map[string]any{"content": "hi"}, map[string]any{"content": "yo"}, map[string]any{"content": "new"}},
		"plan":       map[string]any{"steps": []any{"b"}, "odd key": 2},
		"with space": true,
	}
	rows, _ := handlers.DiffValues(a, b)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join(r.Lines, "|"))
	}
	want := []string{`~ messages[2].content: "old" → "new"`, `~ plan["odd key"]: 1 → 2|~ plan.steps[0]: "a" → "b"`, `+ ["with space"]: true`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("diff lines %q, want %q", got, want)
	}
}

func TestHappenedLabelsEachCheckpoint(t *testing.T) {
	t.Parallel()
	snap := func(id, parent string, src checkpoints.Source, step int, run string, next ...string) *engine.StateSnapshot {
		s := &engine.StateSnapshot{Config: checkpoints.Config{ThreadID: "t", CheckpointID: id}, Next: next,
			Metadata: checkpoints.Metadata{Source: src, Step: step, RunID: run}}
		if parent != "" {
			s.ParentConfig = &checkpoints.Config{ThreadID: "t", CheckpointID: parent}
		}
		return s
	}
	edit := snap("e", "c", checkpoints.SourceUpdate, 2, "")
	// As a saver hands it back: decoded JSON.
	edit.Metadata.Extra = map[string]any{"edited": map[string]any{"fetch": []any{"answer", "n"}}}
	page := []*engine.StateSnapshot{ // newest first
		snap("g", "a", checkpoints.SourceFork, 1, ""),            // a copy of b: b's step + 1
		snap("h", "c", checkpoints.SourceFork, 1, "r4"),          // a re-run saved before forks took the next step
		snap("f", "b", checkpoints.SourceFork, 1, "r3", "draft"), // a re-run of b
		edit,
		snap("d", "c", checkpoints.SourceLoop, 2, "r2"),
		snap("c", "b", checkpoints.SourceLoop, 1, "r1", "review"),
		snap("b", "a", checkpoints.SourceLoop, 0, "r1", "draft"),
		snap("a", "", checkpoints.SourceInput, -1, "r1", "__start__"),
		snap("x", "off-page", checkpoints.SourceLoop, 7, "r1"),
	}
	iv, _ := json.Marshal([]engine.Interruption{{ID: "i1", Value: "Ship it?", Node: "review"}})
	pending := map[string][]checkpoints.PendingWrite{"c": {
		{TaskID: "t-review", Channel: checkpoints.InterruptChannel, Value: iv},
		{TaskID: "00000000-0000-0000-0000-000000000000", Channel: checkpoints.ResumeChannel, Value: json.RawMessage(`"yes, ship ` + strings.Repeat("it ", 30) + `"`)},
	}}
	got := handlers.Happened(page, pending)
	for id, want := range map[string]string{
		"a": "input:input",
		"b": "step:step 0: __start__",
		"c": "step:step 1: draft|interrupt:interrupt (review)",
		"d": `answer:answer "yes, ship it it it it it it it it it it…|step:step 2: review`,
		"e": "edit:edit of answer, n as fetch",
		"f": "rerun:re-run from b",
		"g": "fork:fork (copy)",
		"h": "rerun:re-run from c",
		"x": "step:step 7",
	} {
		var parts []string
		for _, h := range got[id] {
			parts = append(parts, h.Kind+":"+h.Text)
		}
		if s := strings.Join(parts, "|"); s != want {
			t.Errorf("%s: %s, want %s", id, s, want)
		}
	}
}

// One edit changes a key, adds a declared key that has no value yet and
// leaves the rest alone; an unknown key is refused naming the valid ones;
// nothing changed is refused too. Nothing refused is written.
func TestEditSeveralKeysAndAddOne(t *testing.T) {
	t.Parallel()
	f := setup(t)
	finishedWith(t, f, "multi", map[string]any{"answer": "first"})
	h := f.history(t, "flow", "multi")
	head := h[0].Config.CheckpointID
	if _, ok := f.values(t, "flow", "multi")["n"]; ok {
		t.Fatal("n has a value before the edit; the test needs a key without one")
	}
	page := f.get(t, "/threads/multi/checkpoints/"+head)
	if !strings.Contains(page.body, `<option value="n">n</option>`) {
		t.Fatalf("the add-a-key picker does not offer n: %.3000s", page.body)
	}
	path := "/threads/multi/checkpoints/" + head + "/update"
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"unknown key", url.Values{"key": {"answer", "bogus"}, "value": {`"x"`, "1"}}, `unknown state key &#34;bogus&#34;: this graph&#39;s state keys are answer, log, n`},
		{"nothing changed", url.Values{"key": {"answer", "log", ""}, "value": {`"first"`, `["fetch", "slow"]`, ""}}, "nothing to change"},
		{"key twice", url.Values{"key": {"n", "n"}, "value": {"1", "2"}}, "given twice"},
		{"unpaired", url.Values{"key": {"n", "answer"}, "value": {"1"}}, "2 keys but 1 values"},
		{"value without key", url.Values{"key": {""}, "value": {"1"}}, "no key was picked"},
	} {
		res := f.post(t, path, tc.form)
		if res.code != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
			t.Errorf("%s: %d, want 400 saying %q: %.600s", tc.name, res.code, tc.want, res.body)
		}
	}
	if n := len(f.history(t, "flow", "multi")); n != len(h) {
		t.Fatalf("refused edits wrote %d checkpoints", n-len(h))
	}
	res := f.post(t, path, url.Values{"key": {"answer", "log", "n"}, "value": {`"second"`, `["fetch","slow"]`, "7"}, "as_node": {"slow"}})
	if res.code != http.StatusSeeOther {
		t.Fatalf("edit = %d: %.600s", res.code, res.body)
	}
	v := f.values(t, "flow", "multi")
	if v["answer"] != "second" || v["n"] != 7 || fmt.Sprint(v["log"]) != "[fetch slow]" {
		t.Fatalf("values after the edit = %v; want answer second, n 7 and the log unchanged", v)
	}
	if n := len(f.history(t, "flow", "multi")); n != len(h)+1 {
		t.Fatalf("the edit wrote %d checkpoints, want one", n-len(h))
	}
	tree := f.get(t, res.location)
	if !strings.Contains(tree.body, "edit of answer, n as slow") {
		t.Errorf("the edit's row does not say what it changed: %.4000s", tree.body)
	}
}

// A thread stopped at an interrupt and answered: the tree names the
// interrupt and the answer; the finished head cannot be resumed, and the
// page says why.
func TestTreeLabelsInterruptAndAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, err := f.runs.Start(context.Background(), "approval", "ask", nil, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "ask")
	before := f.get(t, "/threads/ask/checkpoints")
	if !strings.Contains(before.body, "interrupt (review)") || strings.Contains(before.body, `id="resume-reason"`) {
		t.Fatalf("the interrupted head: %.4000s", before.body)
	}
	if _, err := f.runs.Resume(context.Background(), "ask", "true"); err != nil {
		t.Fatal(err)
	}
	f.wait(t, "ask")
	after := f.get(t, "/threads/ask/checkpoints")
	for _, want := range []string{"interrupt (review)", `answer &#34;true&#34;`, "step 2: review", "step 1: draft", ">input<",
		`id="resume-head" disabled`, `<span id="resume-reason" class="muted">nothing to run: the head has no next tasks</span>`} {
		if !strings.Contains(after.body, want) {
			t.Errorf("the answered thread's tree lacks %q", want)
		}
	}
}

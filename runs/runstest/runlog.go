package runstest

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// ExerciseRunLog runs the conformance suite of runs.RunLog against the
// logs newLog makes, one parallel subtest per behaviour; newLog is called
// once per subtest and must return an empty log.
//
// It covers saving (create and replace) and reading back every field,
// the list's order (oldest first, ties by run id), its limit (the latest
// runs), threads kept apart, records as copies, and the input every log
// must refuse with runs.ErrInvalidInput, writing nothing.
func ExerciseRunLog(t *testing.T, newLog func(t *testing.T) runs.RunLog) {
	t.Helper()
	for _, c := range runLogCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newLog(t))
		})
	}
}

var runLogCases = []struct {
	name string
	run  func(t *testing.T, l runs.RunLog)
}{
	{"SaveThenListReturnsEveryField", runSaveThenList},
	{"SaveReplacesTheRun", runSaveReplaces},
	{"ListOldestFirstTiesByIDAndThreadsApart", runListOrder},
	{"ListLimitKeepsTheLatest", runListLimit},
	{"SaveRejectsBadRecords", runSaveBad},
	{"ListRejectsBadInput", runListBad},
	{"RecordsAreCopies", runRecordsAreCopies},
	{"APIFieldsRoundTrip", runAPIFields},
	{"DeleteRunRemovesOnlyThatRun", runDeleteRun},
}

// runAPIFields: what the Agent Server API keeps with a run (assistant,
// metadata, kwargs, strategy) reads back as saved, JSON numbers and
// nesting included; a run without them reads back without them; an
// oversized one is refused.
func runAPIFields(t *testing.T, l runs.RunLog) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r := run("t1", "r1", at)
	r.Meta = &runs.RunMeta{Assistant: "a-1", Strategy: "enqueue",
		Metadata: map[string]any{"user": "ana", "n": 2.5, "nested": map[string]any{"ok": true}},
		Kwargs:   map[string]any{"input": map[string]any{"topic": "café"}, "stream_mode": []any{"values"}}}
	mustSaveRun(t, l, r)
	mustSaveRun(t, l, run("t1", "r2", at.Add(time.Second)))
	got := mustListRuns(t, l, "t1", 0)
	if len(got) != 2 || got[0].Meta == nil || !reflect.DeepEqual(*got[0].Meta, *r.Meta) {
		t.Fatalf("run r1 read back %+v, want meta %+v", got, r.Meta)
	}
	if got[1].Meta != nil {
		t.Fatalf("run r2 was saved without API fields, read back %+v", got[1].Meta)
	}
	big := run("t1", "r3", at)
	big.Meta = &runs.RunMeta{Metadata: map[string]any{"x": strings.Repeat("a", runs.MaxRunMetaBytes)}}
	if err := l.SaveRun(ctx(), big); !errors.Is(err, runs.ErrInvalidInput) {
		t.Fatalf("SaveRun with %d bytes of metadata = %v, want ErrInvalidInput", runs.MaxRunMetaBytes, err)
	}
}

// runDeleteRun: a deleted run is gone from its thread's list, the others
// (and other threads' runs of the same id) stay; deleting it again is
// ErrUnknownRun.
func runDeleteRun(t *testing.T, l runs.RunLog) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mustSaveRun(t, l, run("t1", "r1", at))
	mustSaveRun(t, l, run("t1", "r2", at.Add(time.Second)))
	mustSaveRun(t, l, run("t2", "r1", at))
	if err := l.DeleteRun(ctx(), "t1", "r1"); err != nil {
		t.Fatal(err)
	}
	if got := mustListRuns(t, l, "t1", 0); len(got) != 1 || got[0].RunID != "r2" {
		t.Fatalf("after deleting r1, thread t1 lists %+v, want r2 only", got)
	}
	if got := mustListRuns(t, l, "t2", 0); len(got) != 1 {
		t.Fatalf("deleting t1's r1 touched t2: %+v", got)
	}
	if err := l.DeleteRun(ctx(), "t1", "r1"); !errors.Is(err, runs.ErrUnknownRun) {
		t.Fatalf("deleting r1 again = %v, want ErrUnknownRun", err)
	}
}

func run(thread, id string, at time.Time) runs.RunRecord {
	return runs.RunRecord{Thread: thread, RunID: id, Kind: runs.RunStart, Started: at, Status: runs.StatusRunning}
}

func mustSaveRun(t *testing.T, l runs.RunLog, r runs.RunRecord) {
	t.Helper()
	if err := l.SaveRun(ctx(), r); err != nil {
		t.Fatalf("SaveRun(%q): %v", r.RunID, err)
	}
}

func mustListRuns(t *testing.T, l runs.RunLog, thread string, limit int) []runs.RunRecord {
	t.Helper()
	rs, err := l.ListRuns(ctx(), thread, limit)
	if err != nil {
		t.Fatalf("ListRuns(%q, %d): %v", thread, limit, err)
	}
	return rs
}

func runIDs(rs []runs.RunRecord) string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.RunID
	}
	return strings.Join(ids, ",")
}

// full is a record with every field set, times with nanoseconds.
func full() runs.RunRecord {
	return runs.RunRecord{
		Thread: "t-1", RunID: "run-2", Kind: runs.RunResume, From: "ckpt-9", Origin: "Studio thread page",
		Started: base, Ended: base.Add(1500 * time.Millisecond), Status: runs.StatusError, Error: "node \"pay\": boom",
		Tasks: []runs.TaskOutcome{
			{Step: 1, TaskID: "a1", Node: "lookup", Outcome: runs.OutcomeCached, DurationMS: 0.25},
			{Step: 2, TaskID: "b2", Node: "pay", Outcome: runs.OutcomeFailed, Attempts: 3, Error: "boom"},
			{Step: 2, TaskID: "c3", Node: "notify", Outcome: runs.OutcomeCancelled},
			{Step: 3, TaskID: "d4", Node: "ask", Outcome: runs.OutcomeInterrupted},
			{Step: 3, TaskID: "e5", Node: "sum", Outcome: runs.OutcomeDone, DurationMS: 12.5, Attempts: 1},
		},
		Answers: []runs.Answer{
			{InterruptID: "i-1", Node: "ask", Question: `{"question":"Pay €2,500?"}`, Answer: `true`, Origin: "Studio thread page", At: base.Add(time.Second)},
			{Origin: "API", At: base.Add(2 * time.Second)},
		},
		Takeovers: []runs.Takeover{{Attempt: 2, At: base.Add(1200*time.Millisecond + 7)}},
	}
}

func runSaveThenList(t *testing.T, l runs.RunLog) {
	want := full()
	mustSaveRun(t, l, want)
	got := mustListRuns(t, l, "t-1", 0)
	if len(got) != 1 {
		t.Fatalf("ListRuns = %d records, want 1", len(got))
	}
	w := want.Normalized()
	if !reflect.DeepEqual(got[0], w) {
		t.Fatalf("read back\n got %+v\nwant %+v", got[0], w)
	}
	if got[0].Started.Location() != time.UTC || got[0].Started.Nanosecond()%1000 != 0 {
		t.Fatalf("Started = %v: want UTC, microseconds", got[0].Started)
	}
	// A run still going has no end.
	going := run("t-1", "run-3", base.Add(time.Hour))
	mustSaveRun(t, l, going)
	if got := mustListRuns(t, l, "t-1", 0); !got[1].Ended.IsZero() || got[1].Tasks != nil || got[1].Answers != nil {
		t.Fatalf("a run without end, tasks or answers reads back as %+v", got[1])
	}
}

func runSaveReplaces(t *testing.T, l runs.RunLog) {
	r := run("t-1", "run-1", base)
	mustSaveRun(t, l, r)
	r.Status, r.Ended = runs.StatusIdle, base.Add(time.Second)
	r.Tasks = []runs.TaskOutcome{{Step: 1, TaskID: "x", Node: "n", Outcome: runs.OutcomeDone}}
	mustSaveRun(t, l, r)
	got := mustListRuns(t, l, "t-1", 0)
	if len(got) != 1 || got[0].Status != runs.StatusIdle || len(got[0].Tasks) != 1 {
		t.Fatalf("after a second save: %+v", got)
	}
	// The start record saved again (a retry landing late) does not undo
	// the run's end.
	mustSaveRun(t, l, run("t-1", "run-1", base))
	if got := mustListRuns(t, l, "t-1", 0); len(got) != 1 || got[0].Status != runs.StatusIdle || got[0].Ended.IsZero() {
		t.Fatalf("a late start record replaced the end: %+v", got)
	}
}

func runListOrder(t *testing.T, l runs.RunLog) {
	mustSaveRun(t, l, run("t-1", "c", base.Add(2*time.Second)))
	mustSaveRun(t, l, run("t-1", "b", base))
	mustSaveRun(t, l, run("t-1", "a", base))
	mustSaveRun(t, l, run("t-2", "z", base.Add(-time.Hour)))
	if got := runIDs(mustListRuns(t, l, "t-1", 0)); got != "a,b,c" {
		t.Fatalf("t-1 lists %s, want a,b,c", got)
	}
	if got := runIDs(mustListRuns(t, l, "t-2", 0)); got != "z" {
		t.Fatalf("t-2 lists %s, want z", got)
	}
	if got := mustListRuns(t, l, "nobody", 0); len(got) != 0 {
		t.Fatalf("a thread without runs lists %d", len(got))
	}
}

func runListLimit(t *testing.T, l runs.RunLog) {
	for i, id := range []string{"r1", "r2", "r3", "r4"} {
		mustSaveRun(t, l, run("t-1", id, base.Add(time.Duration(i)*time.Second)))
	}
	if got := runIDs(mustListRuns(t, l, "t-1", 2)); got != "r3,r4" {
		t.Fatalf("limit 2 lists %s, want the latest two, r3,r4", got)
	}
}

func runSaveBad(t *testing.T, l runs.RunLog) {
	many := make([]runs.TaskOutcome, runs.MaxRunTasks+1)
	for i := range many {
		many[i] = runs.TaskOutcome{Step: i, TaskID: "t", Node: "n", Outcome: runs.OutcomeDone}
	}
	bad := map[string]func(r *runs.RunRecord){
		"bad thread id":     func(r *runs.RunRecord) { r.Thread = "a/b" },
		"bad run id":        func(r *runs.RunRecord) { r.RunID = "" },
		"unknown kind":      func(r *runs.RunRecord) { r.Kind = "replay" },
		"unknown status":    func(r *runs.RunRecord) { r.Status = "paused" },
		"no start":          func(r *runs.RunRecord) { r.Started = time.Time{} },
		"unknown outcome":   func(r *runs.RunRecord) { r.Tasks[0].Outcome = "skipped" },
		"too many tasks":    func(r *runs.RunRecord) { r.Tasks = many },
		"long origin":       func(r *runs.RunRecord) { r.Origin = strings.Repeat("o", runs.MaxOriginBytes+1) },
		"long answer":       func(r *runs.RunRecord) { r.Answers[0].Answer = strings.Repeat("a", runs.AnswerPreviewBytes+1) },
		"NUL in task error": func(r *runs.RunRecord) { r.Tasks[1].Error = "a\x00b" },
		"bad UTF-8":         func(r *runs.RunRecord) { r.Answers[0].Question = "\xff" },
		"too many takeovers": func(r *runs.RunRecord) {
			r.Takeovers = make([]runs.Takeover, runs.MaxTakeovers+1)
		},
	}
	for name, spoil := range bad {
		r := full()
		spoil(&r)
		if err := l.SaveRun(ctx(), r); !errors.Is(err, runs.ErrInvalidInput) {
			t.Errorf("%s: SaveRun = %v, want ErrInvalidInput", name, err)
		}
	}
	if got := mustListRuns(t, l, "t-1", 0); len(got) != 0 {
		t.Fatalf("refused records were written: %d", len(got))
	}
}

func runListBad(t *testing.T, l runs.RunLog) {
	if _, err := l.ListRuns(ctx(), "a b", 0); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("ListRuns(bad id) = %v, want ErrInvalidInput", err)
	}
	if _, err := l.ListRuns(ctx(), "t-1", -1); !errors.Is(err, runs.ErrInvalidInput) {
		t.Errorf("ListRuns(limit -1) = %v, want ErrInvalidInput", err)
	}
}

func runRecordsAreCopies(t *testing.T, l runs.RunLog) {
	r := full()
	mustSaveRun(t, l, r)
	r.Tasks[0].Node = "changed"
	got := mustListRuns(t, l, "t-1", 0)
	if got[0].Tasks[0].Node != "lookup" {
		t.Fatalf("a caller's change reached the log: %q", got[0].Tasks[0].Node)
	}
	got[0].Answers[0].Answer = "changed"
	if again := mustListRuns(t, l, "t-1", 0); again[0].Answers[0].Answer != "true" {
		t.Fatalf("a reader's change reached the log: %q", again[0].Answers[0].Answer)
	}
}

package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// The run of a process that died mid-run (no queue: its run-log record
// was written when it got going) is ended when a restarted Manager
// settles its thread, and a join of it answers, after a later run on the
// thread too, rather than wait for ever.
func TestJoinOfADeadProcesssRunAfterALaterRunAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	threads, log := runs.NewMemoryThreads(), runs.NewMemoryRunLog()
	now := time.Now().Add(-time.Hour)
	const th, dead = "t-orphan", "0190b0e4-0000-7000-8000-000000000001"
	// What the dead process left: the thread running under it, and its
	// run's start record.
	if err := threads.SaveThread(ctx, runs.ThreadRecord{ID: th, Graph: "linear", Status: runs.StatusRunning, RunID: dead,
		Owner: "gone-process", Updated: now, Created: now, StateUpdated: now}); err != nil {
		t.Fatal(err)
	}
	if err := log.SaveRun(ctx, runs.RunRecord{Thread: th, RunID: dead, Kind: runs.RunStart, Started: now, Status: runs.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	m, err := runs.NewManager(testGraphs(t, nil), runs.WithThreadStore(threads), runs.WithRunLog(log))
	if err != nil {
		t.Fatal(err)
	}
	c := serveManager(t, m, nil)
	if info, err := m.Thread(ctx, th); err != nil || info.Status == runs.StatusRunning {
		t.Fatalf("the orphan was not settled: %+v, %v", info, err)
	}
	// Its run's record ends with it: it does not read as running.
	if rec, err := m.RunRecord(ctx, th, dead); err != nil || rec.Ended.IsZero() || rec.Status != runs.StatusError || rec.Error != runs.StoppedReason {
		t.Fatalf("the dead run's record: %+v, %v; want it ended as stopped", rec, err)
	}
	// A later run on the thread.
	c.json("POST", "/threads/"+th+"/runs/wait", map[string]any{"assistant_id": "linear", "input": map[string]any{"log": []string{"later"}}}, 200)
	// Join the dead run.
	req, err := http.NewRequest("GET", c.base+"/threads/"+th+"/runs/"+dead+"/join", nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(rctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("join: %d", res.StatusCode)
	}
	buf := make([]byte, 4096)
	var body []byte
	for {
		n, err := res.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			if rctx.Err() != nil {
				t.Fatalf("join of the dead run had not answered after 5s (got %q)", body)
			}
			break
		}
	}
}

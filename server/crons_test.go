package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/internal/testclock"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/server"
)

// cronT0 is half a minute past midnight: a "* * * * *" cron made then
// fires first at 00:01.
var cronT0 = time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)

func minute(n int) time.Time { return time.Date(2030, 1, 1, 0, n, 0, 0, time.UTC) }

type cronServer struct {
	*client
	api   *server.API
	clock *testclock.Clock
	store runs.CronStore
}

// cronBackends runs test with the crons (and the threads) in memory
// and in Postgres.
func cronBackends(t *testing.T, test func(t *testing.T, newServer func() *cronServer)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		test(t, func() *cronServer { return newCronServer(t, runs.NewMemoryCrons(), nil) })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.Schema(t, nil)
		test(t, func() *cronServer {
			return newCronServer(t, pgthreads.NewCrons(pool), pgthreads.NewAssistants(pool),
				runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool)))
		})
	})
}

func newCronServer(t *testing.T, store runs.CronStore, assistants runs.AssistantStore, opts ...runs.ManagerOption) *cronServer {
	t.Helper()
	m, err := runs.NewManager(testGraphs(t, nil), opts...)
	if err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Config{Runs: m, Crons: store, Assistants: assistants})
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(cronT0)
	server.SetCronClock(api, clock.Now)
	// The test fires due crons itself and counts them.
	server.SetCronTicker(api, false)
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		api.Close()
		m.Close()
	})
	return &cronServer{client: &client{t: t, base: srv.URL}, api: api, clock: clock, store: store}
}

func (c *cronServer) fire(want int) {
	c.t.Helper()
	n, err := server.FireDueCrons(context.Background(), c.api)
	if err != nil {
		c.t.Fatal(err)
	}
	if n != want {
		c.t.Fatalf("fired %d crons at %s, want %d", n, c.clock.Now().Format(time.TimeOnly), want)
	}
}

func (c *client) fails(want int, method, path string, body any, words ...string) {
	c.t.Helper()
	code, _, b := c.do(method, path, body)
	if code != want {
		c.t.Fatalf("%s %s = %d %s, want %d", method, path, code, b, want)
	}
	for _, w := range words {
		if !strings.Contains(string(b), w) {
			c.t.Errorf("%s %s: %s does not say %q", method, path, b, w)
		}
	}
}

func (c *client) newThread() string {
	c.t.Helper()
	return c.json("POST", "/threads", map[string]any{}, 200)["thread_id"].(string)
}

// cronRuns lists the thread's runs oldest first, with the due time each
// fired for.
func (c *client) cronRuns(thread string) []string {
	c.t.Helper()
	var out []string
	rs := c.list("GET", "/threads/"+thread+"/runs?limit=100", nil, 200)
	for i := len(rs) - 1; i >= 0; i-- {
		md, _ := rs[i]["metadata"].(map[string]any)
		out = append(out, fmt.Sprint(md["cron_fire_time"]))
	}
	return out
}

func TestCronAPIShapeAndValidation(t *testing.T) {
	t.Parallel()
	cronBackends(t, func(t *testing.T, newServer func() *cronServer) {
		c := newServer()
		if flags := c.json("GET", "/info", nil, 200)["flags"].(map[string]any); flags["crons"] != true {
			t.Errorf("/info flags %v, want crons true", flags)
		}
		thread := c.newThread()
		got := c.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{
			"assistant_id": "linear", "schedule": "*/5 * * * *", "input": map[string]any{"log": []string{"x"}},
			"metadata": map[string]any{"owner": "ops"}, "multitask_strategy": "enqueue",
		}, 200)
		asst := c.json("GET", "/assistants/"+got["assistant_id"].(string), nil, 200)
		if asst["graph_id"] != "linear" {
			t.Errorf("the cron's assistant %v runs %v, want linear's own", got["assistant_id"], asst["graph_id"])
		}
		if _, err := uuid.Parse(fmt.Sprint(got["cron_id"])); err != nil {
			t.Errorf("cron_id %v is not a UUID", got["cron_id"])
		}
		for k, want := range map[string]any{"thread_id": thread, "schedule": "*/5 * * * *", "end_time": nil, "user_id": nil,
			"enabled": true, "next_run_date": "2030-01-01T00:05:00Z"} {
			if got[k] != want {
				t.Errorf("%s = %v, want %v", k, got[k], want)
			}
		}
		if md := got["metadata"].(map[string]any); md["owner"] != "ops" {
			t.Errorf("metadata %v, want owner ops", md)
		}
		if p := got["payload"].(map[string]any); fmt.Sprint(p["input"]) != "map[log:[x]]" || p["multitask_strategy"] != "enqueue" || p["schedule"] != nil {
			t.Errorf("payload %v: want the run's body without the cron's own fields", p)
		}
		for _, k := range []string{"created_at", "updated_at"} {
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(got[k])); err != nil {
				t.Errorf("%s = %v, want a time", k, got[k])
			}
		}
		stateless := c.json("POST", "/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "@hourly",
			"input": map[string]any{}, "end_time": "2030-01-01T03:30:00Z", "on_run_completed": "keep"}, 200)
		if stateless["thread_id"] != nil || stateless["on_run_completed"] != "keep" || stateless["next_run_date"] != "2030-01-01T01:00:00Z" ||
			stateless["end_time"] != "2030-01-01T03:30:00Z" {
			t.Errorf("stateless cron %v", stateless)
		}

		// Search, count, select, sort, pages.
		if got := c.list("POST", "/runs/crons/search", map[string]any{"thread_id": thread}, 200); len(got) != 1 || got[0]["cron_id"] != got[0]["cron_id"] {
			t.Errorf("search by thread: %v", got)
		}
		all := c.list("POST", "/runs/crons/search", map[string]any{"sort_by": "next_run_date", "sort_order": "asc"}, 200)
		if len(all) != 2 || all[0]["thread_id"] != thread || all[1]["thread_id"] != nil {
			t.Errorf("search by next run, ascending: %v", all)
		}
		if got := c.list("POST", "/runs/crons/search", map[string]any{"assistant_id": "linear", "limit": 1, "offset": 1, "sort_by": "next_run_date", "select": []string{"cron_id", "schedule"}}, 200); len(got) != 1 || len(got[0]) != 2 || got[0]["schedule"] != "@hourly" {
			t.Errorf("second page of one, selected: %v", got)
		}
		for body, want := range map[string]string{`{}`: "2", `{"thread_id":"` + thread + `"}`: "1", `{"assistant_id":"linear"}`: "2", `{"assistant_id":"` + uuid.NewString() + `"}`: "0"} {
			var b map[string]any
			_ = json.Unmarshal([]byte(body), &b)
			if _, _, got := c.do("POST", "/runs/crons/count", b); string(got) != want {
				t.Errorf("count %s = %s, want %s", body, got, want)
			}
		}

		// Update: a new schedule moves the next run; disabled it is not
		// listed as enabled.
		id := got["cron_id"].(string)
		up := c.json("PATCH", "/runs/crons/"+id, map[string]any{"schedule": "0 6 * * *", "enabled": false, "metadata": map[string]any{"k": 1}}, 200)
		if up["next_run_date"] != "2030-01-01T06:00:00Z" || up["enabled"] != false || fmt.Sprint(up["metadata"]) != "map[k:1 owner:ops]" {
			t.Errorf("updated: %v", up)
		}
		if got := c.list("POST", "/runs/crons/search", map[string]any{"enabled": false}, 200); len(got) != 1 || got[0]["cron_id"] != id {
			t.Errorf("search of disabled crons: %v", got)
		}

		// Refusals name the field.
		cron := func(extra map[string]any) map[string]any {
			b := map[string]any{"assistant_id": "linear", "schedule": "* * * * *", "input": map[string]any{}}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
		path := "/threads/" + thread + "/runs/crons"
		c.fails(422, "POST", path, cron(map[string]any{"schedule": "every minute"}), "schedule")
		c.fails(422, "POST", path, cron(map[string]any{"schedule": "* * * *"}), "schedule")
		c.fails(422, "POST", path, cron(map[string]any{"schedule": "0 0 30 2 *"}), "schedule", "never")
		c.fails(422, "POST", path, cron(map[string]any{"schedule": "CRON_TZ=America/New_York 30 1 * * *"}), "schedule", "UTC")
		c.fails(422, "POST", path, cron(map[string]any{"schedule": "@every 1s"}), "schedule", "@every")
		c.fails(422, "POST", path, cron(map[string]any{"schedule": nil}), "schedule", "required")
		c.fails(422, "POST", path, cron(map[string]any{"end_time": "tomorrow"}), "end_time")
		c.fails(422, "POST", path, cron(map[string]any{"multitask_strategy": "sometimes"}), "multitask_strategy")
		c.fails(422, "POST", path, cron(map[string]any{"input": map[string]any{"nope": 1}}), "nope")
		c.fails(422, "POST", path, cron(map[string]any{"enabled": "yes"}), "enabled")
		c.fails(422, "POST", "/runs/crons", cron(map[string]any{"on_run_completed": "archive"}), "on_run_completed")
		c.fails(422, "POST", "/runs/crons", cron(map[string]any{"input": nil}), "input")
		c.fails(404, "POST", path, cron(map[string]any{"assistant_id": uuid.NewString()}), "assistant")
		c.fails(404, "POST", "/threads/"+uuid.NewString()+"/runs/crons", cron(nil), "thread", "if_not_exists")
		made := uuid.NewString()
		c.json("POST", "/threads/"+made+"/runs/crons", cron(map[string]any{"if_not_exists": "create", "enabled": false}), 200)
		if th := c.json("GET", "/threads/"+made, nil, 200); th["thread_id"] != made {
			t.Errorf("if_not_exists create made %v", th)
		}
		c.fails(422, "PATCH", "/runs/crons/"+id, map[string]any{"schedule": "61 * * * *"}, "schedule")
		c.fails(422, "PATCH", "/runs/crons/"+id, map[string]any{"schedule": 5}, "schedule", "string")
		// A change is checked as a creation is: not refused at every
		// firing instead.
		c.fails(422, "PATCH", "/runs/crons/"+id, map[string]any{"input": map[string]any{"nope": 1}}, "nope")
		c.fails(422, "PATCH", "/runs/crons/"+id, map[string]any{"webhook": "https://elsewhere.example/hook"}, "webhook")
		c.fails(422, "POST", "/runs/crons/search", map[string]any{"sort_by": "schedule"}, "sort_by")
		c.fails(422, "POST", "/runs/crons/search", map[string]any{"select": []string{"secret"}}, "select")
		c.fails(422, "DELETE", "/runs/crons/not-a-uuid", nil, "cron_id")
		c.fails(404, "PATCH", "/runs/crons/"+uuid.NewString(), map[string]any{"enabled": true}, "cron")

		if code, _, b := c.do("DELETE", "/runs/crons/"+id, nil); code != 204 {
			t.Fatalf("delete = %d %s", code, b)
		}
		c.fails(404, "DELETE", "/runs/crons/"+id, nil, "cron")
		if _, _, b := c.do("POST", "/runs/crons/count", nil); string(b) != "2" {
			t.Errorf("count after delete = %s, want 2 (the stateless one, the new thread's)", b)
		}
	})
}

// TestThreadCronFiresOnSchedule: a thread's cron starts a run on the
// thread at each due time, once (a firing tried again starts nothing),
// skips the times missed while nothing looked, stops at its end time,
// and stops when deleted; deleting the thread deletes its crons.
func TestThreadCronFiresOnSchedule(t *testing.T) {
	t.Parallel()
	cronBackends(t, func(t *testing.T, newServer func() *cronServer) {
		c := newServer()
		st := c.store
		thread := c.newThread()
		cr := c.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
			"input": map[string]any{"log": []string{"tick"}}, "end_time": "2030-01-01T00:05:30Z"}, 200)
		c.fire(0) // 00:00:30: not due
		c.clock.Set(minute(1))
		c.fire(1)
		waitValues(t, c.client, thread, "[tick a b c]")
		if got := c.cronRuns(thread); fmt.Sprint(got) != "[2030-01-01T00:01:00Z]" {
			t.Fatalf("runs of the thread fired for %v, want one for 00:01", got)
		}
		rs := c.list("GET", "/threads/"+thread+"/runs", nil, 200)
		if md := rs[0]["metadata"].(map[string]any); md["cron_id"] != cr["cron_id"] {
			t.Errorf("the run's metadata %v does not name its cron", md)
		}
		// The same firing again (a fire job retried after a crash).
		f := runs.CronFiring{At: minute(1)}
		f.Cron, _ = st.GetCron(context.Background(), cr["cron_id"].(string))
		if err := server.FireCron(context.Background(), c.api, f); err != nil {
			t.Fatal(err)
		}
		c.fire(0)
		if got := c.cronRuns(thread); len(got) != 1 {
			t.Fatalf("a firing tried again started another run: %v", got)
		}
		if got := c.list("POST", "/runs/crons/search", nil, 200)[0]["next_run_date"]; got != "2030-01-01T00:02:00Z" {
			t.Errorf("next run after 00:01 is %v, want 00:02", got)
		}
		// Nothing looked from 00:01 to 00:04:10: one run (for the first
		// time missed), not three.
		c.clock.Set(minute(4).Add(10 * time.Second))
		c.fire(1)
		waitValues(t, c.client, thread, "[tick a b c tick a b c]")
		c.clock.Set(minute(5))
		c.fire(1)
		waitValues(t, c.client, thread, "[tick a b c tick a b c tick a b c]")
		// Past its end time it never fires again.
		if got := c.list("POST", "/runs/crons/search", nil, 200)[0]["next_run_date"]; got != nil {
			t.Errorf("next run past the end time is %v, want null", got)
		}
		c.clock.Set(minute(30))
		c.fire(0)
		if got := c.cronRuns(thread); fmt.Sprint(got) != "[2030-01-01T00:01:00Z 2030-01-01T00:02:00Z 2030-01-01T00:05:00Z]" {
			t.Errorf("fired for %v", got)
		}

		// A deleted cron stops.
		other := c.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
			"input": map[string]any{"log": []string{"other"}}}, 200)
		if code, _, b := c.do("DELETE", "/runs/crons/"+other["cron_id"].(string), nil); code != 204 {
			t.Fatalf("delete = %d %s", code, b)
		}
		c.clock.Set(minute(31))
		c.fire(0)

		// Deleting the thread deletes its crons.
		c.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
			"input": map[string]any{}}, 200)
		if code, _, b := c.do("DELETE", "/threads/"+thread, nil); code != 204 {
			t.Fatalf("delete thread = %d %s", code, b)
		}
		if _, _, b := c.do("POST", "/runs/crons/count", map[string]any{"thread_id": thread}); string(b) != "0" {
			t.Errorf("crons of the deleted thread: %s, want 0", b)
		}
		c.clock.Set(minute(32))
		c.fire(0)

		// Deleting an assistant deletes its crons.
		asst := c.json("POST", "/assistants", map[string]any{"graph_id": "linear"}, 200)["assistant_id"].(string)
		c.json("POST", "/runs/crons", map[string]any{"assistant_id": asst, "schedule": "* * * * *", "input": map[string]any{}}, 200)
		if _, _, b := c.do("POST", "/runs/crons/count", map[string]any{"assistant_id": asst}); string(b) != "1" {
			t.Fatalf("crons of the new assistant: %s, want 1", b)
		}
		if code, _, b := c.do("DELETE", "/assistants/"+asst, nil); code != 204 {
			t.Fatalf("delete assistant = %d %s", code, b)
		}
		if _, _, b := c.do("POST", "/runs/crons/count", nil); string(b) != "0" {
			t.Errorf("crons after their assistant was deleted: %s, want 0", b)
		}
	})
}

// TestStatelessCronRunsOnANewThreadEachTime: each firing of a stateless
// cron runs on a thread of its own (named after the firing), deleted
// once the run ended unless on_run_completed is keep.
func TestStatelessCronRunsOnANewThreadEachTime(t *testing.T) {
	t.Parallel()
	c := newCronServer(t, runs.NewMemoryCrons(), nil)
	keep := c.json("POST", "/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
		"input": map[string]any{"log": []string{"kept"}}, "on_run_completed": "keep"}, 200)
	gone := c.json("POST", "/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
		"input": map[string]any{"log": []string{"gone"}}}, 200)
	if gone["on_run_completed"] != "delete" {
		t.Errorf("on_run_completed defaults to %v, want delete", gone["on_run_completed"])
	}
	threadOf := func(cron map[string]any, at time.Time) string {
		return runs.CronFiring{Cron: runs.Cron{ID: cron["cron_id"].(string)}, At: at}.Key()
	}
	c.clock.Set(minute(1))
	c.fire(2)
	c.clock.Set(minute(2))
	c.fire(2)
	for _, at := range []time.Time{minute(1), minute(2)} {
		waitValues(t, c.client, threadOf(keep, at), "[kept a b c]")
	}
	// Each deleted thread goes once its run ended.
	deadline := time.Now().Add(10 * time.Second)
	for _, at := range []time.Time{minute(1), minute(2)} {
		for {
			code, _, _ := c.do("GET", "/threads/"+threadOf(gone, at), nil)
			if code == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the thread of the firing at %s is still there (%d)", at.Format(time.TimeOnly), code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// A firing tried again after its process died with the run started
	// (its thread left behind): the thread goes once idle. (That it
	// starts no second run is checked with a kept one below.)
	left := runs.CronFiring{Cron: runs.Cron{ID: gone["cron_id"].(string), Assistant: gone["assistant_id"].(string),
		Payload: gone["payload"].(map[string]any), OnRunCompleted: "delete", Enabled: true}, At: minute(3)}
	c.json("POST", "/threads", map[string]any{"thread_id": left.Key()}, 200)
	if err := server.FireCron(context.Background(), c.api, left); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for {
		code, _, _ := c.do("GET", "/threads/"+left.Key(), nil)
		if code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread left behind by a firing is still there (%d)", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A kept firing tried again starts nothing on its thread.
	f := runs.CronFiring{Cron: runs.Cron{ID: keep["cron_id"].(string), Assistant: keep["assistant_id"].(string),
		Payload: keep["payload"].(map[string]any), OnRunCompleted: "keep", Enabled: true}, At: minute(1)}
	if err := server.FireCron(context.Background(), c.api, f); err != nil {
		t.Fatal(err)
	}
	if rs := c.list("GET", "/threads/"+threadOf(keep, minute(1))+"/runs", nil, 200); len(rs) != 1 {
		t.Errorf("the firing's thread has %d runs, want 1", len(rs))
	}
}

// TestCronTickerFiresWithoutBeingAsked: the API's own ticker fires a due
// cron within its tick.
func TestCronTickerFiresWithoutBeingAsked(t *testing.T) {
	t.Parallel()
	c := newCronServer(t, runs.NewMemoryCrons(), nil)
	server.SetCronTicker(c.api, true)
	thread := c.newThread()
	c.json("POST", "/threads/"+thread+"/runs/crons", map[string]any{"assistant_id": "linear", "schedule": "* * * * *",
		"input": map[string]any{"log": []string{"tick"}}}, 200)
	c.clock.Set(minute(1))
	waitValues(t, c.client, thread, "[tick a b c]")
}

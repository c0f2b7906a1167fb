package pgparts_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs/pgevents"
	"github.com/superstep-dev/superstep/runs/pgparts"
)

// setup returns two pools on one fresh, migrated schema, as two Studio
// replicas would have, with thread t leased at fence 3.
func setup(tb testing.TB) (a, b *pgxpool.Pool) {
	tb.Helper()
	ctx := context.Background()
	a = pgtest.Schema(tb, nil)
	b, err := pgxpool.NewWithConfig(ctx, a.Config().Copy())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	if _, err := a.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, run_id, holder) VALUES ('t', 3, 'r', 'replica-a')`); err != nil {
		tb.Fatal(err)
	}
	return a, b
}

// part is part id of a run, with data that jsonb would have changed: keys
// out of order, spaces, a number written with an exponent.
func part(id int64) pgparts.Part {
	return pgparts.Part{ID: id, Mode: "values", Namespace: []string{"sub:1"},
		Data: json.RawMessage(fmt.Sprintf(`{"z": %d,"a":[1e2, "x"]}`, id))}
}

func parts(from, to int64) []pgparts.Part {
	var ps []pgparts.Part
	for i := from; i <= to; i++ {
		ps = append(ps, part(i))
	}
	return ps
}

// checkParts fails unless ps are exactly part(from)..part(to), in order,
// byte for byte.
func checkParts(tb testing.TB, ps []pgparts.Part, from, to int64) {
	tb.Helper()
	if int64(len(ps)) != to-from+1 {
		tb.Fatalf("got %d parts, want ids %d..%d", len(ps), from, to)
	}
	for i, p := range ps {
		want := part(from + int64(i))
		if p.ID != want.ID || p.Mode != want.Mode || fmt.Sprint(p.Namespace) != fmt.Sprint(want.Namespace) || string(p.Data) != string(want.Data) {
			tb.Fatalf("part %d is %+v (data %s), want %+v (data %s)", i, p, p.Data, want, want.Data)
		}
	}
}

func TestAppendKeepsIDsOrderAndExactData(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	ctx := context.Background()
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(3, 3)); err != nil {
		t.Fatal(err)
	}
	if err := pgparts.Append(ctx, a, "t", "other", 3, parts(0, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := pgparts.Read(ctx, b, "r", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkParts(t, got, 0, 3)
	if got, _ = pgparts.Read(ctx, b, "r", 1, 0); len(got) != 2 || got[0].ID != 2 {
		t.Fatalf("read after 1: %+v, want parts 2 and 3", got)
	}
	if got, _ = pgparts.Read(ctx, b, "r", -1, 2); len(got) != 2 {
		t.Fatalf("read with limit 2 gave %d parts", len(got))
	}
	// A part stored twice (a retried append that had committed) is an
	// error, never a second copy a client would see.
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(3, 3)); err == nil {
		t.Fatal("a second append of part 3 succeeded")
	}
}

func TestFencedAppendWritesNothing(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	if err := pgparts.Append(ctx, a, "t", "r", 2, parts(0, 1)); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append at a superseded fence: %v, want ErrFenced", err)
	}
	if err := pgparts.Append(ctx, a, "unleased", "r", 1, parts(0, 1)); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append to a thread without a lease: %v, want ErrFenced", err)
	}
	if got, _ := pgparts.Read(ctx, a, "r", -1, 0); len(got) != 0 {
		t.Fatalf("fenced appends left %d parts", len(got))
	}
	// A takeover moves the fence on: the old holder is refused, the new
	// one numbers on from the last part stored.
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(0, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, `UPDATE studio_thread_leases SET holder = 'replica-b', fence = 4`); err != nil {
		t.Fatal(err)
	}
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(2, 2)); !errors.Is(err, pgevents.ErrFenced) {
		t.Fatalf("append by the holder of a lease taken over: %v, want ErrFenced", err)
	}
	last, found, ended, err := pgparts.State(ctx, a, "r")
	if err != nil || last != 1 || !found || ended {
		t.Fatalf("State = %d, %v, %v, %v; want 1, found, not ended", last, found, ended, err)
	}
	if err := pgparts.Append(ctx, a, "t", "r", 4, parts(2, 2)); err != nil {
		t.Fatal(err)
	}
	got, _ := pgparts.Read(ctx, a, "r", -1, 0)
	checkParts(t, got, 0, 2)
}

func TestEndComesLastAndOnce(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	if last, found, ended, err := pgparts.State(ctx, a, "r"); err != nil || last != -1 || found || ended {
		t.Fatalf("State of an unknown run = %d, %v, %v, %v; want -1, not found", last, found, ended, err)
	}
	if err := pgparts.Append(ctx, a, "t", "r", 3, parts(0, 4)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := pgparts.End(ctx, a, "t", "r", true); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := pgparts.Read(ctx, a, "r", -1, 0)
	if len(got) != 6 || !got[5].IsEnd() || got[5].ID != 5 {
		t.Fatalf("after two ends the run holds %+v, want parts 0..4 then one end", got)
	}
	checkParts(t, got[:5], 0, 4)
	if last, found, ended, err := pgparts.State(ctx, a, "r"); err != nil || last != 4 || !found || !ended {
		t.Fatalf("State = %d, %v, %v, %v; want 4, found, ended", last, found, ended, err)
	}
	// A run with no parts ends too: its end is id 0.
	if err := pgparts.End(ctx, a, "t", "empty", false); err != nil {
		t.Fatal(err)
	}
	if last, found, ended, err := pgparts.State(ctx, a, "empty"); err != nil || last != -1 || !found || !ended {
		t.Fatalf("State of an empty ended run = %d, %v, %v, %v; want -1, found, ended", last, found, ended, err)
	}
}

// TestNotifyCarriesOnlyIDs appends a 100 kB part to the longest run id
// the Studio accepts: the notification is "run seq", far below 8000 bytes.
func TestNotifyCarriesOnlyIDs(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	run := strings.Repeat("aZ9._-", 22)[:128]
	conn, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var channel string
	if err := conn.QueryRow(ctx, `SELECT current_schema() || '.studio_parts'`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `LISTEN "`+channel+`"`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), "UNLISTEN *") //nolint:errcheck
	big := pgparts.Part{ID: 0, Mode: "values", Data: json.RawMessage(`{"text": "` + strings.Repeat("x", 100000) + `"}`)}
	if err := pgparts.Append(ctx, a, "t", run, 3, []pgparts.Part{big}); err != nil {
		t.Fatal(err)
	}
	if err := pgparts.End(ctx, a, "t", run, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{run + " 0", run + " 1"} {
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		n, err := conn.Conn().WaitForNotification(wctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if n.Payload != want || len(n.Payload) >= 8000 {
			t.Fatalf("payload %q (%d bytes), want %q", n.Payload, len(n.Payload), want)
		}
	}
	got, _ := pgparts.Read(ctx, a, run, -1, 0)
	if len(got) != 2 || string(got[0].Data) != string(big.Data) {
		t.Fatal("the big part was not stored whole")
	}
}

func TestPruneKeepsWhatAProcessKeeps(t *testing.T) {
	t.Parallel()
	a, _ := setup(t)
	ctx := context.Background()
	run := func(id string, keep bool, endedAgo time.Duration) {
		t.Helper()
		if err := pgparts.Append(ctx, a, "t", id, 3, parts(0, 2)); err != nil {
			t.Fatal(err)
		}
		if err := pgparts.End(ctx, a, "t", id, keep); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exec(ctx, `UPDATE studio_run_parts SET at = now() - make_interval(secs => $2) WHERE run_id = $1`, id, endedAgo.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	run("kept-1", true, 3*time.Hour) // the oldest kept: beyond keepRuns
	run("kept-2", true, 2*time.Hour)
	run("kept-3", true, time.Hour)
	run("too-old", true, 48*time.Hour)
	run("unkept-recent", false, time.Second)
	run("unkept-old", false, 5*time.Minute)
	// Going on for two days: all but its last part go.
	if err := pgparts.Append(ctx, a, "t", "going", 3, parts(0, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, `UPDATE studio_run_parts SET at = now() - interval '2 days' WHERE run_id = 'going'`); err != nil {
		t.Fatal(err)
	}
	if _, err := pgparts.Prune(ctx, a, 2, 24*time.Hour, time.Minute); err != nil {
		t.Fatal(err)
	}
	count := func(id string) int {
		got, err := pgparts.Read(ctx, a, id, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	for id, want := range map[string]int{"kept-1": 0, "kept-2": 4, "kept-3": 4, "too-old": 0, "unkept-recent": 4, "unkept-old": 0, "going": 1} {
		if got := count(id); got != want {
			t.Errorf("run %s keeps %d rows after pruning, want %d", id, got, want)
		}
	}
	if last, _, _, _ := pgparts.State(ctx, a, "going"); last != 2 {
		t.Fatalf("the run going on numbers on after %d, want 2", last)
	}
}

// TestTailerFollowsRunsFromTheirFirstPart follows two runs through one
// Tailer on Source, from before their first part (id 0), from another
// pool: each gets its parts live, in order, each once, and the end.
func TestTailerFollowsRunsFromTheirFirstPart(t *testing.T) {
	t.Parallel()
	a, b := setup(t)
	ctx := context.Background()
	tl := pgevents.NewTailer(b, &pgevents.TailerOptions{Source: &pgparts.Source})
	t.Cleanup(tl.Close)
	var mu sync.Mutex
	got := map[string][]pgparts.Part{}
	follow := func(run string, after int64) {
		tl.Follow(run, after, func(rows []pgevents.Row) {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rows {
				p, err := pgparts.Decode(r.Body)
				if err != nil {
					t.Error(err)
				}
				got[run+fmt.Sprint(after)] = append(got[run+fmt.Sprint(after)], p)
			}
		})
	}
	follow("r1", -1)
	follow("r1", 1) // a second follower of the run, further on
	follow("r2", -1)
	w := pgevents.NewWriter(a, "t", "r1", 3, pgparts.WriterOptions("t", "r1", 3, nil))
	for i := range int64(40) {
		w.Add(pgparts.Encode(part(i)))
		if i%7 == 0 {
			if err := pgparts.Append(ctx, a, "t", "r2", 3, parts(i/7, i/7)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pgparts.End(ctx, a, "t", "r1", true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n1, n2, n3 := len(got["r1-1"]), len(got["r11"]), len(got["r2-1"])
		mu.Unlock()
		if n1 == 41 && n2 == 39 && n3 == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("followers got %d, %d and %d parts in 15 s, want 41, 39 and 6", n1, n2, n3)
		}
		time.Sleep(2 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	checkParts(t, got["r1-1"][:40], 0, 39)
	checkParts(t, got["r11"][:38], 2, 39)
	checkParts(t, got["r2-1"], 0, 5)
	if !got["r1-1"][40].IsEnd() || !got["r11"][38].IsEnd() {
		t.Fatal("the followers of r1 did not get its end last")
	}
}

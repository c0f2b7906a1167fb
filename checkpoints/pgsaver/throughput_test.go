package pgsaver_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// throughputClients is the number of threads running at once in
// BenchmarkPGThroughput64, and of pgbench's clients.
const throughputClients = 64

// throughputConns is the size of the saver's pool in
// BenchmarkPGThroughput64: measured on 2 cores, 16 connections (groups of
// about four saves) beat 8 (fewer, larger groups) and 64 (almost no
// grouping, 64 backends on 2 cores) in both modes.
const throughputConns = 16

// BenchmarkPGThroughput64 runs the counter loop (BenchmarkPGSuperstepSync's
// 100 supersteps after the input) on 64 threads at once. "async" is the
// engine's default durability, DurabilityAsync: each run saves its
// checkpoints and writes in the background, in order, and returns once
// they are all saved; the engine saves a superstep's writes (PutWrites) and
// its checkpoint (PutFrame) as two saves. "sync" saves each superstep's
// writes and checkpoint together (one PutFrame) before the next starts.
// supersteps/s counts every superstep of every run (the input checkpoint
// included) over the wall time of the 64 runs.
//
// The floor is pgbench, run in the same benchmark against the same
// database and tables: 64 clients (-c 64 -j 2, prepared statements), each
// transaction one statement inserting a checkpoint row shaped like the
// counter loop's and the two pending-write rows of its step, as PutFrame's
// hot path does. x-pgbench is supersteps/s over pgbench's tps.
//
// The saver's pool has throughputConns connections (pgbench has one per
// client): with more threads saving than connections, the saver sends
// the saves that wait together, one transaction for many (group commit;
// Options.MaxTransactions). The saver takes the caller's pool, so sizing
// it is the caller's choice; the package doc has the guidance this
// follows.
func BenchmarkPGThroughput64(b *testing.B) {
	pgbench := pgbenchPath()
	if pgbench == "" {
		b.Skip("pgbench not found (on PATH or in /usr/lib/postgresql/*/bin): it comes with the PostgreSQL client packages (postgresql-client); install them to measure this target")
	}
	for _, mode := range []struct {
		name string
		dur  engine.Durability
	}{{"async", engine.DurabilityAsync}, {"sync", engine.DurabilitySync}} {
		b.Run(mode.name, func(b *testing.B) {
			base := pgtest.Schema(b, nil)
			ctx := context.Background()
			cfg := base.Config().Copy()
			cfg.MaxConns = throughputConns
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			cg := counterLoop(b, pgsaver.New(pool, nil))
			var elapsed time.Duration
			runs := 0
			b.ReportAllocs()
			for b.Loop() {
				elapsed += runThreads(b, cg, fmt.Sprint(runs), mode.dur)
				runs++
			}
			b.StopTimer()
			steps := float64(runs*throughputClients*loopSupersteps) / elapsed.Seconds()
			tps := runPgbench(b, pgbench, base, max(3, int(elapsed.Seconds()+0.5)))
			b.ReportMetric(steps, "supersteps/s")
			b.ReportMetric(tps, "pgbench-tps")
			b.ReportMetric(steps/tps, "x-pgbench")
		})
	}
}

// runThreads runs the counter loop on throughputClients threads at once
// and returns the wall time they took.
func runThreads(b *testing.B, cg *engine.Graph[counterState], prefix string, dur engine.Durability) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, throughputClients)
	for c := range throughputClients {
		thread := fmt.Sprintf("many-%s-%d", prefix, c)
		wg.Go(func() {
			out, err := cg.Invoke(ctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: thread, Durability: dur})
			if err == nil && out.N != loopSteps {
				err = fmt.Errorf("thread %s ended at n=%d", thread, out.N)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return elapsed
}

// pgbenchPath finds pgbench on PATH or in the PostgreSQL packages' bin
// folders, or returns "".
func pgbenchPath() string {
	if p, err := exec.LookPath("pgbench"); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(found) > 0 {
		return found[len(found)-1]
	}
	return ""
}

// pgbenchStep is pgbench's transaction: the counter loop's step as one
// statement, a checkpoint row (floorInsert's values, its seq and id from
// the saver's sequence) and its step's two writes, in a thread per client.
// pgbench reads ":name" as a variable, so the literals that hold colons
// are spelled with chr(58) or in hex.
const pgbenchStep = `WITH s AS (SELECT nextval('checkpoint_seq') AS seq),
w AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
    SELECT 'pgbench-' || CAST(:client_id AS text), '', 'parent-' || s.seq, 'task-' || s.seq, x.i, x.c, '', 'json', x.v
    FROM s, (VALUES (0, 'n', '\x3432'::bytea), (1, 'branch' || chr(58) || 'to' || chr(58) || 'inc', '\x6e756c6c'::bytea)) AS x(i, c, v)
)
INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, checkpoint, metadata,
                         value_channels, value_versions, value_hashes, value_inline)
SELECT 'pgbench-' || CAST(:client_id AS text), '', 'cp-' || s.seq, s.seq, 'parent-' || s.seq, '\x%s'::bytea,
       convert_from('\x%s'::bytea, 'UTF8')::jsonb,
       ARRAY['__start__', 'branch' || chr(58) || 'to' || chr(58) || 'inc', 'n'], '{2,43,43}'::bigint[], '{NULL,NULL,NULL}'::bytea[],
       ARRAY['\x7b226e223a307d'::bytea, '\x6e756c6c'::bytea, '\x3432'::bytea]
FROM s;
`

var pgbenchTPS = regexp.MustCompile(`(?m)^tps = ([0-9.]+)`)

// runPgbench runs pgbench for seconds against the database and schema of
// pool and returns its transactions per second.
func runPgbench(b *testing.B, pgbench string, pool *pgxpool.Pool, seconds int) float64 {
	b.Helper()
	var schema string
	if err := pool.QueryRow(context.Background(), `SELECT current_schema()`).Scan(&schema); err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(b.TempDir(), "step.sql")
	sql := fmt.Sprintf(pgbenchStep, hex.EncodeToString(floorBody), hex.EncodeToString([]byte(`{"parents":{},"source":"loop","step":42}`)))
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(pgbench, "-n", "-M", "prepared", "-f", script, "-c", strconv.Itoa(throughputClients), "-j", "2",
		"-T", strconv.Itoa(seconds), pgtest.URL(b))
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+schema+",public")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		b.Fatalf("pgbench printed no tps line:\n%s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil || tps <= 0 {
		b.Fatalf("pgbench tps %q: %v", m[1], err)
	}
	return tps
}

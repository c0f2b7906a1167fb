package riverq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
)

// How a benchmark's run goes: a plain run (as BenchmarkQueueFirstEvent's),
// an API run asking for its stream parts (values, updates and debug,
// kept) on a process that keeps them in memory only, or one on a process
// that also stores them in Postgres for the other replicas' clients.
type partsCase int

const (
	plainRun partsCase = iota
	partsInMemory
	partsStored
)

func (c partsCase) String() string { return [...]string{"plain", "memory", "stored"}[c] }

// partsManager is benchManager's process with a queue; for partsInMemory
// its event log is not a runs.PartStore, so parts stay in the process.
func partsManager(b *testing.B, pool *pgxpool.Pool, id string, c partsCase) *runs.Manager {
	b.Helper()
	if c != partsInMemory {
		return benchManager(b, pool, id, true)
	}
	sg := engine.NewStateGraph[countState]()
	for _, n := range []string{"a", "b", "c"} {
		sg.AddNode(n, func(context.Context, countState) (engine.Output, error) {
			return engine.Update{"log": n}, nil
		})
	}
	sg.AddEdge(engine.Start, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", engine.End)
	g, err := sg.Compile(engine.CompileOptions{Checkpointer: pgsaver.New(pool, nil)})
	if err != nil {
		b.Fatal(err)
	}
	q, err := riverq.New(pool, riverq.Config{ID: id})
	if err != nil {
		b.Fatal(err)
	}
	events := riverq.NewEventLog(pool, nil)
	b.Cleanup(events.Close)
	m, err := runs.NewManager(map[string]engine.Compiled{"abc": g}, runs.WithThreadStore(pgthreads.New(pool)),
		runs.WithRunLog(pgthreads.NewRunLog(pool)), runs.WithQueue(q), runs.WithEventLog(eventsOnly{events}))
	if err != nil {
		b.Fatal(err)
	}
	if err := q.Start(context.Background(), m); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = q.Shutdown(context.Background(), m, 0) })
	return m
}

// eventsOnly hides that an event log is a runs.PartStore.
type eventsOnly struct{ runs.EventLog }

// streamed starts a run of graph abc on thread as c says.
func streamed(ctx context.Context, m *runs.Manager, thread string, c partsCase) error {
	if c == plainRun {
		_, err := m.Start(ctx, "abc", thread, nil, runs.StartOptions{})
		return err
	}
	_, err := m.Run(ctx, runs.RunRequest{Graph: "abc", Thread: thread, Input: map[string]any{},
		Stream: &runs.StreamSpec{Modes: []engine.StreamMode{engine.StreamValues, engine.StreamUpdates, engine.StreamDebug}, Keep: true}})
	return err
}

// BenchmarkPartsFirstEvent measures what storing an API run's stream
// parts adds to the run's first event (Run returning, the run got going)
// and to its end (Wait returning), on processes with a queue: API runs
// keeping their parts in memory and API runs also storing them alternate
// on the same database. added-p50-ms is the difference of the medians.
func BenchmarkPartsFirstEvent(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	ms := map[partsCase]*runs.Manager{partsInMemory: partsManager(b, pool, "memory", partsInMemory), partsStored: partsManager(b, pool, "stored", partsStored)}
	ctx := context.Background()
	first := map[partsCase][]time.Duration{}
	end := map[partsCase][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, c := range []partsCase{partsInMemory, partsStored} {
			thread := uuid.NewString()
			start := time.Now()
			if err := streamed(ctx, ms[c], thread, c); err != nil {
				b.Fatal(err)
			}
			first[c] = append(first[c], time.Since(start))
			if _, err := ms[c].Wait(ctx, thread); err != nil {
				b.Fatal(err)
			}
			end[c] = append(end[c], time.Since(start))
		}
	}
	b.StopTimer()
	ms2 := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	mem, st := first[partsInMemory], first[partsStored]
	b.ReportMetric(ms2(percentile(mem, 0.5)), "memory-p50-ms")
	b.ReportMetric(ms2(percentile(st, 0.5)), "stored-p50-ms")
	b.ReportMetric(ms2(percentile(st, 0.99)), "stored-p99-ms")
	b.ReportMetric(ms2(percentile(st, 0.5)-percentile(mem, 0.5)), "added-p50-ms")
	b.ReportMetric(ms2(percentile(st, 0.99)-percentile(mem, 0.99)), "added-p99-ms")
	b.ReportMetric(ms2(percentile(end[partsStored], 0.5)-percentile(end[partsInMemory], 0.5)), "end-added-p50-ms")
}

// BenchmarkPartsThroughput is BenchmarkQueueThroughput's 1,000 short runs
// through 1 or 3 processes with a queue, as plain runs and as API runs
// whose stream parts are kept in memory or also stored, in runs per
// second.
func BenchmarkPartsThroughput(b *testing.B) {
	for _, replicas := range []int{1, 3} {
		for _, c := range []partsCase{plainRun, partsInMemory, partsStored} {
			b.Run(fmt.Sprintf("replicas=%d/%s", replicas, c), func(b *testing.B) {
				ms := processes(b, replicas, func(p *pgxpool.Pool, id string) *runs.Manager { return partsManager(b, p, id, c) })
				throughput(b, ms, func(ctx context.Context, m *runs.Manager, thread string) error { return streamed(ctx, m, thread, c) })
			})
		}
	}
}

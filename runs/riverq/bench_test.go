package riverq_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// benchManager is a Studio process for the benchmarks: a three-node
// graph on Postgres, with a queue (durable runs) or without (runs live
// in the process, as before issue #19).
func benchManager(b *testing.B, pool *pgxpool.Pool, id string, queued bool) *runs.Manager {
	b.Helper()
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
	opts := []runs.ManagerOption{runs.WithThreadStore(pgthreads.New(pool)), runs.WithRunLog(pgthreads.NewRunLog(pool))}
	var q *riverq.Queue
	if queued {
		q, err = riverq.New(pool, riverq.Config{ID: id})
		if err != nil {
			b.Fatal(err)
		}
		events := riverq.NewEventLog(pool, nil)
		b.Cleanup(events.Close)
		opts = append(opts, runs.WithQueue(q), runs.WithEventLog(events))
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"abc": g}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	if q != nil {
		if err := q.Start(context.Background(), m); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = q.Shutdown(context.Background(), m, 0) })
	} else {
		b.Cleanup(m.Close)
	}
	return m
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkQueueFirstEvent measures what the queue adds to a run's first
// event: the time from Start to the run having got going (its input's
// checkpoint saved, which is when Start returns and the first events are
// out), for a process with a queue and one without, alternating in the
// same run on the same database. added-p50-ms is the difference of the
// medians; the target is <= 5 ms.
func BenchmarkQueueFirstEvent(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	direct := benchManager(b, pool, "direct", false)
	queued := benchManager(b, pool, "queued", true)
	ctx := context.Background()
	var d, q []time.Duration
	b.ResetTimer()
	for range b.N {
		for _, m := range []*runs.Manager{direct, queued} {
			thread := uuid.NewString()
			start := time.Now()
			if _, err := m.Start(ctx, "abc", thread, nil, runs.StartOptions{}); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			if m == direct {
				d = append(d, took)
			} else {
				q = append(q, took)
			}
			if _, err := m.Wait(ctx, thread); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(d, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(percentile(q, 0.5)), "queued-p50-ms")
	b.ReportMetric(ms(percentile(q, 0.99)), "queued-p99-ms")
	b.ReportMetric(ms(percentile(q, 0.5)-percentile(d, 0.5)), "added-p50-ms")
	b.ReportMetric(ms(percentile(q, 0.99)-percentile(d, 0.99)), "added-p99-ms")
}

// BenchmarkQueueThroughput runs 1,000 short runs (three nodes, each on its
// own thread) through 1 or 3 processes on one database, 48 at a time,
// spread evenly over the processes, and reports runs per second; no-queue
// is one process without durable runs, for comparison. The processes
// share this machine's 2 cores, as replicas on one host would, and each
// has pgxpool's default pool (4 connections here).
func BenchmarkQueueThroughput(b *testing.B) {
	for _, c := range []struct {
		name     string
		replicas int
		queued   bool
	}{{"no-queue", 1, false}, {"replicas=1", 1, true}, {"replicas=3", 3, true}} {
		replicas := c.replicas
		b.Run(c.name, func(b *testing.B) {
			ms := processes(b, replicas, func(p *pgxpool.Pool, id string) *runs.Manager { return benchManager(b, p, id, c.queued) })
			throughput(b, ms, func(ctx context.Context, m *runs.Manager, thread string) error {
				_, err := m.Start(ctx, "abc", thread, nil, runs.StartOptions{})
				return err
			})
		})
	}
}

// processes makes n processes on one fresh schema, each with its own
// pool, as separate processes have.
func processes(b *testing.B, n int, mk func(p *pgxpool.Pool, id string) *runs.Manager) []*runs.Manager {
	b.Helper()
	pool := pgtest.Schema(b, nil)
	ms := make([]*runs.Manager, n)
	for i := range ms {
		p, err := pgxpool.NewWithConfig(context.Background(), pool.Config().Copy())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(p.Close)
		ms[i] = mk(p, fmt.Sprintf("r%d", i))
	}
	return ms
}

// throughput starts 1,000 runs (each on a new thread, by start), 48 at a
// time, spread evenly over ms, waits for each, and reports runs per
// second.
func throughput(b *testing.B, ms []*runs.Manager, start func(ctx context.Context, m *runs.Manager, thread string) error) {
	b.Helper()
	const total, parallel = 1000, 48
	ctx := context.Background()
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		next := make(chan int, total)
		for i := range total {
			next <- i
		}
		close(next)
		began := time.Now()
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for i := range next {
					m, thread := ms[i%len(ms)], uuid.NewString()
					if err := start(ctx, m, thread); err != nil {
						b.Error(err)
						return
					}
					if _, err := m.Wait(ctx, thread); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(began)
	}
	b.StopTimer()
	b.ReportMetric(float64(total*b.N)/elapsed.Seconds(), "runs/s")
}

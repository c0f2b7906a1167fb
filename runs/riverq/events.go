package riverq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgevents"
	"github.com/superstep-dev/superstep/runs/pgparts"
)

// EventLog is runs.EventLog in Postgres (package runs/pgevents): the
// events go to studio_events, and one connection per process LISTENs for
// the ids of new ones.
//
// It is also runs.PartStore (package runs/pgparts): API runs' stream
// parts go to studio_run_parts, followed the same way.
type EventLog struct {
	pool    *pgxpool.Pool
	tailer  *pgevents.Tailer
	parts   *pgevents.Tailer
	onError func(error)
	stop    context.CancelFunc
	pruned  chan struct{}
}

// FlushAfter is how long a run's event waits for others to share its
// append: the events of a step (a task's start and end, the barrier, the
// checkpoint) usually go in one. Tabs on other Studios see them that much
// later; the Studio running the run shows them at once.
const FlushAfter = 10 * time.Millisecond

// Retention of the event log: each thread keeps its newest KeepEvents
// events, and older ones for KeepFor; every Studio prunes every
// PruneEvery (deleting the same rows twice is harmless).
const (
	KeepEvents = 1000
	KeepFor    = 24 * time.Hour
	PruneEvery = time.Minute
)

// Retention of API runs' parts (StreamSpec.Keep) for a reconnect or a
// late join on any Studio: those of the runs.PartLogsKept runs that ended
// last, for at most KeepFor; those of a run not asking for them to be
// kept go KeepUnkeptFor after it ended (a client reading them live on
// another Studio gets them first).
const KeepUnkeptFor = time.Minute

var (
	_ runs.EventLog  = (*EventLog)(nil)
	_ runs.PartStore = (*EventLog)(nil)
)

// NewEventLog opens the event log on pool; onError receives what no
// caller can be told (a follower's lost connection, a write that
// failed). Close it when done.
func NewEventLog(pool *pgxpool.Pool, onError func(error)) *EventLog {
	if onError == nil {
		onError = func(error) {}
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &EventLog{pool: pool, onError: onError, tailer: pgevents.NewTailer(pool, &pgevents.TailerOptions{OnError: onError}),
		parts: pgevents.NewTailer(pool, &pgevents.TailerOptions{OnError: onError, Source: &pgparts.Source}),
		stop:  stop, pruned: make(chan struct{})}
	go l.prune(ctx)
	return l
}

// Close stops following and pruning.
func (l *EventLog) Close() {
	l.stop()
	<-l.pruned
	l.tailer.Close()
	l.parts.Close()
}

func (l *EventLog) prune(ctx context.Context) {
	defer close(l.pruned)
	tick := time.NewTicker(PruneEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := pgevents.Prune(ctx, l.pool, KeepEvents, KeepFor); err != nil && ctx.Err() == nil {
			l.onError(fmt.Errorf("riverq: prune the event log: %w", err))
		}
		if _, err := pgparts.Prune(ctx, l.pool, runs.PartLogsKept, KeepFor, KeepUnkeptFor); err != nil && ctx.Err() == nil {
			l.onError(fmt.Errorf("riverq: prune the runs' parts: %w", err))
		}
	}
}

// Writer implements runs.EventLog.
func (l *EventLog) Writer(thread, runID string, fence int64) runs.EventWriter {
	return fencedWriter{pgevents.NewWriter(l.pool, thread, runID, fence, &pgevents.WriterOptions{FlushAfter: FlushAfter})}
}

// Recent implements runs.EventLog.
func (l *EventLog) Recent(ctx context.Context, thread string, limit int) (string, [][]byte, int64, error) {
	rows, last, err := pgevents.Recent(ctx, l.pool, thread, limit)
	if err != nil || len(rows) == 0 {
		return "", nil, last, err
	}
	bodies := make([][]byte, len(rows))
	for i, r := range rows {
		bodies[i] = r.Body
	}
	return rows[0].RunID, bodies, last, nil
}

// Follow implements runs.EventLog.
func (l *EventLog) Follow(thread string, after int64, fn func(runID string, body []byte)) func() {
	return l.tailer.Follow(thread, after, func(rows []pgevents.Row) {
		for _, r := range rows {
			fn(r.RunID, r.Body)
		}
	})
}

// fencedWriter reports a fenced-out writer as checkpoints.ErrFenced, the
// error every fenced write of a run gives.
type fencedWriter struct{ *pgevents.Writer }

func (w fencedWriter) Close() error {
	err := w.Writer.Close()
	if errors.Is(err, pgevents.ErrFenced) {
		return fmt.Errorf("%w: %w", checkpoints.ErrFenced, err)
	}
	return err
}

// PartWriter implements runs.PartStore.
func (l *EventLog) PartWriter(thread, runID string, fence int64) runs.PartWriter {
	opts := pgparts.WriterOptions(thread, runID, fence, &pgevents.WriterOptions{FlushAfter: FlushAfter})
	return partWriter{fencedWriter{pgevents.NewWriter(l.pool, thread, runID, fence, opts)}}
}

type partWriter struct{ fencedWriter }

func (w partWriter) Add(p runs.Part) {
	w.Writer.Add(pgparts.Encode(pgparts.Part{ID: int64(p.ID), Mode: string(p.Mode), Namespace: p.Namespace, Data: p.Data}))
}

// EndParts implements runs.PartStore.
func (l *EventLog) EndParts(ctx context.Context, thread, runID string, keep bool) error {
	return pgparts.End(ctx, l.pool, thread, runID, keep)
}

// PartsState implements runs.PartStore.
func (l *EventLog) PartsState(ctx context.Context, runID string) (int, bool, bool, error) {
	last, found, ended, err := pgparts.State(ctx, l.pool, runID)
	return int(last), found, ended, err
}

// ReadParts implements runs.PartStore.
func (l *EventLog) ReadParts(ctx context.Context, runID string, after int) ([]runs.Part, bool, error) {
	ps, err := pgparts.Read(ctx, l.pool, runID, int64(after), 0)
	if err != nil {
		return nil, false, err
	}
	parts, ended := partsOf(ps)
	return parts, ended, nil
}

// FollowParts implements runs.PartStore.
func (l *EventLog) FollowParts(runID string, after int, fn func([]runs.Part, bool)) func() {
	return l.parts.Follow(runID, int64(after), func(rows []pgevents.Row) {
		ps := make([]pgparts.Part, 0, len(rows))
		for _, r := range rows {
			p, err := pgparts.Decode(r.Body)
			if err != nil {
				l.onError(fmt.Errorf("riverq: read a part of run %q: %w", runID, err))
				continue
			}
			ps = append(ps, p)
		}
		fn(partsOf(ps))
	})
}

// partsOf maps stored parts to runs.Part, reporting the end when they
// reach it.
func partsOf(ps []pgparts.Part) ([]runs.Part, bool) {
	out := make([]runs.Part, 0, len(ps))
	for _, p := range ps {
		if p.IsEnd() {
			return out, true
		}
		out = append(out, runs.Part{ID: int(p.ID), Mode: engine.StreamMode(p.Mode), Namespace: p.Namespace, Data: p.Data})
	}
	return out, false
}

package riverq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgevents"
)

// EventLog is runs.EventLog in Postgres (package runs/pgevents): the
// events go to studio_events, and one connection per process LISTENs for
// the ids of new ones.
type EventLog struct {
	pool    *pgxpool.Pool
	tailer  *pgevents.Tailer
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

var _ runs.EventLog = (*EventLog)(nil)

// NewEventLog opens the event log on pool; onError receives what no
// caller can be told (a follower's lost connection, a write that
// failed). Close it when done.
func NewEventLog(pool *pgxpool.Pool, onError func(error)) *EventLog {
	if onError == nil {
		onError = func(error) {}
	}
	ctx, stop := context.WithCancel(context.Background())
	l := &EventLog{pool: pool, onError: onError, tailer: pgevents.NewTailer(pool, &pgevents.TailerOptions{OnError: onError}),
		stop: stop, pruned: make(chan struct{})}
	go l.prune(ctx)
	return l
}

// Close stops following and pruning.
func (l *EventLog) Close() {
	l.stop()
	<-l.pruned
	l.tailer.Close()
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

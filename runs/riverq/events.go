package riverq

import (
	"context"
	"errors"
	"fmt"

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
}

var _ runs.EventLog = (*EventLog)(nil)

// NewEventLog opens the event log on pool; onError receives what no
// caller can be told (a follower's lost connection, a write that
// failed). Close it when done.
func NewEventLog(pool *pgxpool.Pool, onError func(error)) *EventLog {
	if onError == nil {
		onError = func(error) {}
	}
	return &EventLog{pool: pool, onError: onError, tailer: pgevents.NewTailer(pool, &pgevents.TailerOptions{OnError: onError})}
}

// Close stops following.
func (l *EventLog) Close() { l.tailer.Close() }

// Writer implements runs.EventLog.
func (l *EventLog) Writer(thread, runID string, fence int64) runs.EventWriter {
	return fencedWriter{pgevents.NewWriter(l.pool, thread, runID, fence, nil)}
}

// Last implements runs.EventLog.
func (l *EventLog) Last(ctx context.Context, thread string) (int64, error) {
	return pgevents.Last(ctx, l.pool, thread)
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

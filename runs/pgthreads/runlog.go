package pgthreads

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/internal/pgfence"
	"github.com/superstep-dev/superstep/runs"
)

// RunLog is the Postgres runs.RunLog, on the studio_runs table of
// migrations/006_runs.sql: one row per run, its tasks and answers as
// JSONB. It is as safe for concurrent use as its DB.
type RunLog struct {
	db DB
	retrier
}

var _ runs.RunLog = (*RunLog)(nil)

// NewRunLog returns a run log on db, whose search_path must reach the
// table of migrations/006_runs.sql. Transient database faults are retried
// as the registry's are (see New and WithRetryWindow).
func NewRunLog(db DB, opts ...Option) *RunLog { return &RunLog{db: db, retrier: newRetrier(db, opts)} }

// SaveRun implements runs.RunLog: one statement, whatever the run's size.
func (l *RunLog) SaveRun(ctx context.Context, rec runs.RunRecord) error {
	if err := runs.CheckRunRecord(rec); err != nil {
		return err
	}
	rec = rec.Normalized()
	tasks, err := json.Marshal(orEmpty(rec.Tasks))
	if err != nil {
		return fmt.Errorf("pgthreads: encode the tasks of run %q: %w", rec.RunID, err)
	}
	answers, err := json.Marshal(orEmpty(rec.Answers))
	if err != nil {
		return fmt.Errorf("pgthreads: encode the answers of run %q: %w", rec.RunID, err)
	}
	var ended *time.Time
	if !rec.Ended.IsZero() {
		ended = &rec.Ended
	}
	var takeovers []byte
	if len(rec.Takeovers) > 0 {
		if takeovers, err = json.Marshal(rec.Takeovers); err != nil {
			return fmt.Errorf("pgthreads: encode the takeovers of run %q: %w", rec.RunID, err)
		}
	}
	var api []byte
	if rec.Meta != nil {
		if api, err = json.Marshal(rec.Meta); err != nil {
			return fmt.Errorf("pgthreads: encode the API fields of run %q: %w", rec.RunID, err)
		}
	}
	save := func(ctx context.Context) error {
		return pgfence.Exec(ctx, l.db, rec.Thread, sqlSaveRun, rec.Thread, rec.RunID, string(rec.Kind), rec.From, rec.Origin,
			rec.Started, ended, string(rec.Status), rec.Error, tasks, answers, api, takeovers)
	}
	// A save whose outcome is unknown landed when the run's row holds this
	// record's status and end (a run is saved when it starts, then when it
	// ends, never twice at once).
	landed := func(ctx context.Context) (bool, error) {
		var ok bool
		err := l.db.QueryRow(ctx, sqlRunLanded, rec.Thread, rec.RunID, string(rec.Status), ended).Scan(&ok)
		return ok, err
	}
	if err := l.retry(ctx, save, landed); err != nil {
		return fmt.Errorf("pgthreads: save run %q of thread %q: %w", rec.RunID, rec.Thread, err)
	}
	return nil
}

// ListRuns implements runs.RunLog.
func (l *RunLog) ListRuns(ctx context.Context, thread string, limit int) ([]runs.RunRecord, error) {
	if err := runs.CheckThreadID(thread); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, fmt.Errorf("%w: limit %d: use 0 (no limit) or more", runs.ErrInvalidInput, limit)
	}
	var lim *int64
	if limit > 0 {
		n := int64(limit)
		lim = &n
	}
	var out []runs.RunRecord
	err := l.retry(ctx, func(ctx context.Context) error {
		rows, err := l.db.Query(ctx, sqlListRuns, thread, lim)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanRun)
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgthreads: list runs of thread %q: %w", thread, err)
	}
	// Read newest first (the index's order, so a limit reads only its
	// rows); listed oldest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// DeleteRun implements runs.RunLog.
func (l *RunLog) DeleteRun(ctx context.Context, thread, runID string) error {
	if err := runs.CheckThreadID(thread); err != nil {
		return err
	}
	var n int64
	err := l.retry(ctx, func(ctx context.Context) error {
		tag, err := l.db.Exec(ctx, sqlDeleteRun, thread, runID)
		n = tag.RowsAffected()
		return err
	}, nil)
	if err != nil {
		return fmt.Errorf("pgthreads: delete run %q of thread %q: %w", runID, thread, err)
	}
	if n == 0 {
		return fmt.Errorf("%w %q of thread %q", runs.ErrUnknownRun, runID, thread)
	}
	return nil
}

// scanRun reads one row of sqlListRuns.
func scanRun(r pgx.CollectableRow) (runs.RunRecord, error) {
	var rec runs.RunRecord
	var kind, status string
	var ended *time.Time
	var tasks, answers, api, takeovers []byte
	if err := r.Scan(&rec.Thread, &rec.RunID, &kind, &rec.From, &rec.Origin, &rec.Started, &ended, &status, &rec.Error, &tasks, &answers, &api, &takeovers); err != nil {
		return rec, err
	}
	if takeovers != nil {
		if err := json.Unmarshal(takeovers, &rec.Takeovers); err != nil {
			return rec, fmt.Errorf("takeovers: %w", err)
		}
	}
	if api != nil {
		rec.Meta = &runs.RunMeta{}
		if err := json.Unmarshal(api, rec.Meta); err != nil {
			return rec, fmt.Errorf("api: %w", err)
		}
	}
	rec.Kind, rec.Status = runs.RunKind(kind), runs.Status(status)
	if ended != nil {
		rec.Ended = *ended
	}
	if err := json.Unmarshal(tasks, &rec.Tasks); err != nil {
		return rec, fmt.Errorf("tasks: %w", err)
	}
	if err := json.Unmarshal(answers, &rec.Answers); err != nil {
		return rec, fmt.Errorf("answers: %w", err)
	}
	return rec.Normalized(), nil
}

// orEmpty encodes nil as an empty array: the columns are NOT NULL.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

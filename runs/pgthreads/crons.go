package pgthreads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/superstep-dev/superstep/runs"
)

// Crons is the Postgres runs.CronStore, on the table of
// migrations/014_crons.sql. Deleting a thread's row deletes its crons
// (a trigger of the migration).
type Crons struct {
	db DB
	retrier
}

var _ runs.CronStore = (*Crons)(nil)

// NewCrons returns a cron store on db, whose search_path must reach the
// table of migrations/014_crons.sql. Transient faults are retried as the
// registry's are (see WithRetryWindow).
func NewCrons(db DB, opts ...Option) *Crons {
	return &Crons{db: db, retrier: newRetrier(db, opts)}
}

const cronColumns = `id, assistant_id, thread_id, schedule, end_time, payload, metadata, next_run_date,
	on_run_completed, enabled, user_id, created_at, updated_at`

func scanCron(row pgx.Row) (runs.Cron, error) {
	var c runs.Cron
	var thread, user *string
	var payload, md []byte
	if err := row.Scan(&c.ID, &c.Assistant, &thread, &c.Schedule, &c.EndTime, &payload, &md, &c.NextRun,
		&c.OnRunCompleted, &c.Enabled, &user, &c.Created, &c.Updated); err != nil {
		return runs.Cron{}, err
	}
	if thread != nil {
		c.Thread = *thread
	}
	if user != nil {
		c.UserID = *user
	}
	var err error
	if c.Payload, err = runs.DecodeAssistantObject(payload); err != nil {
		return runs.Cron{}, fmt.Errorf("cron %s payload: %w", c.ID, err)
	}
	if c.Metadata, err = runs.DecodeAssistantObject(md); err != nil {
		return runs.Cron{}, fmt.Errorf("cron %s metadata: %w", c.ID, err)
	}
	for _, t := range []**time.Time{&c.EndTime, &c.NextRun} {
		if *t != nil {
			s := runs.Stamp(**t)
			*t = &s
		}
	}
	c.Created, c.Updated = runs.Stamp(c.Created), runs.Stamp(c.Updated)
	return c, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func stamped(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	s := runs.Stamp(*t)
	return &s
}

// CreateCron implements runs.CronStore.
func (s *Crons) CreateCron(ctx context.Context, c runs.Cron) (runs.Cron, error) {
	payload, md, err := cronObjects(c)
	if err != nil {
		return runs.Cron{}, err
	}
	if c.OnRunCompleted == "" {
		c.OnRunCompleted = "delete"
	}
	c.Created, c.Updated = runs.Stamp(c.Created), runs.Stamp(c.Updated)
	var out runs.Cron
	run := func(ctx context.Context) error {
		var err error
		out, err = scanCron(s.db.QueryRow(ctx, `INSERT INTO studio_crons (`+cronColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING `+cronColumns,
			c.ID, c.Assistant, nullable(c.Thread), c.Schedule, stamped(c.EndTime), payload, md, stamped(c.NextRun),
			c.OnRunCompleted, c.Enabled, nullable(c.UserID), c.Created, c.Updated))
		return err
	}
	landed := func(ctx context.Context) (bool, error) {
		got, err := scanCron(s.db.QueryRow(ctx, `SELECT `+cronColumns+` FROM studio_crons WHERE id = $1`, c.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err == nil && got.Created.Equal(c.Created) {
			out = got
			return true, nil
		}
		return false, err
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return runs.Cron{}, fmt.Errorf("pgthreads: create cron %s: %w", c.ID, err)
	}
	return out, nil
}

func cronObjects(c runs.Cron) (payload, md []byte, err error) {
	if payload, err = runs.EncodeAssistantObject(c.Payload); err != nil {
		return nil, nil, err
	}
	if md, err = runs.EncodeAssistantObject(c.Metadata); err != nil {
		return nil, nil, err
	}
	return payload, md, nil
}

// GetCron implements runs.CronStore.
func (s *Crons) GetCron(ctx context.Context, id string) (runs.Cron, error) {
	var c runs.Cron
	err := s.retry(ctx, func(ctx context.Context) error {
		var err error
		c, err = scanCron(s.db.QueryRow(ctx, `SELECT `+cronColumns+` FROM studio_crons WHERE id = $1`, id))
		return err
	}, nil)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Cron{}, fmt.Errorf("%w %q", runs.ErrUnknownCron, id)
	}
	return c, err
}

// UpdateCron implements runs.CronStore: the row is locked, patched as
// runs.ApplyCronPatch says and written back in one transaction.
func (s *Crons) UpdateCron(ctx context.Context, id string, p runs.CronPatch, now time.Time) (runs.Cron, error) {
	var out runs.Cron
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		c, err := scanCron(tx.QueryRow(ctx, `SELECT `+cronColumns+` FROM studio_crons WHERE id = $1 FOR UPDATE`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w %q", runs.ErrUnknownCron, id)
		}
		if err != nil {
			return err
		}
		c = runs.ApplyCronPatch(c, p, now)
		payload, md, err := cronObjects(c)
		if err != nil {
			return err
		}
		out, err = scanCron(tx.QueryRow(ctx, `UPDATE studio_crons SET schedule = $2, end_time = $3, payload = $4, metadata = $5,
			next_run_date = $6, on_run_completed = $7, enabled = $8, updated_at = $9 WHERE id = $1 RETURNING `+cronColumns,
			id, c.Schedule, stamped(c.EndTime), payload, md, stamped(c.NextRun), c.OnRunCompleted, c.Enabled, c.Updated))
		return err
	})
	return out, err
}

// inTx runs f in a transaction of s.db (a savepoint when s.db is one).
func (s *Crons) inTx(ctx context.Context, f func(pgx.Tx) error) error {
	b, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return errors.New("pgthreads: the cron store's DB cannot begin a transaction")
	}
	return pgx.BeginFunc(ctx, b, f)
}

// DeleteCron implements runs.CronStore.
func (s *Crons) DeleteCron(ctx context.Context, id string) error {
	var n int64
	err := s.retry(ctx, func(ctx context.Context) error {
		tag, err := s.db.Exec(ctx, `DELETE FROM studio_crons WHERE id = $1`, id)
		n = tag.RowsAffected()
		return err
	}, func(ctx context.Context) (bool, error) {
		_, err := s.GetCron(ctx, id)
		if errors.Is(err, runs.ErrUnknownCron) {
			n = 1
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w %q", runs.ErrUnknownCron, id)
	}
	return nil
}

// DeleteThreadCrons implements runs.CronStore.
func (s *Crons) DeleteThreadCrons(ctx context.Context, thread string) (int, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM studio_crons WHERE thread_id = $1`, thread)
	return int(tag.RowsAffected()), err
}

// cronWhere is the WHERE clause of q, and its arguments from $1.
func cronWhere(q runs.CronQuery) (string, []any) {
	var args []any
	where := "TRUE"
	if q.Assistant != "" {
		args = append(args, q.Assistant)
		where += fmt.Sprintf(" AND assistant_id = $%d", len(args))
	}
	if q.Thread != "" {
		args = append(args, q.Thread)
		where += fmt.Sprintf(" AND thread_id = $%d", len(args))
	}
	if q.Enabled != nil {
		args = append(args, *q.Enabled)
		where += fmt.Sprintf(" AND enabled = $%d", len(args))
	}
	return where, args
}

// SearchCrons implements runs.CronStore.
func (s *Crons) SearchCrons(ctx context.Context, q runs.CronQuery) ([]runs.Cron, error) {
	where, args := cronWhere(q)
	col := "created_at"
	switch q.SortBy {
	case runs.CronByID:
		col = "id"
	case runs.CronByAssistant:
		col = "assistant_id"
	case runs.CronByThread:
		col = "coalesce(thread_id, '')"
	case runs.CronByUpdated:
		col = "updated_at"
	case runs.CronByNextRun:
		col = "next_run_date"
	}
	dir := "ASC NULLS LAST"
	if q.Desc {
		dir = "DESC NULLS FIRST"
	}
	sql := fmt.Sprintf(`SELECT %s FROM studio_crons WHERE %s ORDER BY %s %s, id %s`, cronColumns, where, col, dir, dir[:4])
	if q.Limit > 0 {
		args = append(args, q.Limit)
		sql += fmt.Sprintf(" LIMIT $%d", len(args))
	}
	if q.Offset > 0 {
		args = append(args, q.Offset)
		sql += fmt.Sprintf(" OFFSET $%d", len(args))
	}
	var out []runs.Cron
	err := s.retry(ctx, func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c, err := scanCron(rows)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	}, nil)
	if out == nil {
		out = []runs.Cron{}
	}
	return out, err
}

// CountCrons implements runs.CronStore.
func (s *Crons) CountCrons(ctx context.Context, q runs.CronQuery) (int, error) {
	where, args := cronWhere(q)
	var n int
	err := s.retry(ctx, func(ctx context.Context) error {
		return s.db.QueryRow(ctx, `SELECT count(*) FROM studio_crons WHERE `+where, args...).Scan(&n)
	}, nil)
	return n, err
}

// Due implements runs.CronStore in a transaction of its own.
func (s *Crons) Due(ctx context.Context, now time.Time) ([]runs.CronFiring, error) {
	var out []runs.CronFiring
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = DueTx(ctx, tx, now)
		return err
	})
	return out, err
}

// DueTx is CronStore.Due in the caller's transaction, which may insert
// the firings' jobs before it commits: a due time then is either taken
// with its job or not at all. The due rows are locked, so a concurrent
// caller waits and then finds them moved on.
func DueTx(ctx context.Context, tx pgx.Tx, now time.Time) ([]runs.CronFiring, error) {
	rows, err := tx.Query(ctx, `SELECT `+cronColumns+` FROM studio_crons
		WHERE enabled AND next_run_date <= $1 ORDER BY next_run_date, id FOR UPDATE`, now)
	if err != nil {
		return nil, err
	}
	var out []runs.CronFiring
	for rows.Next() {
		c, err := scanCron(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, runs.CronFiring{Cron: c, At: *c.NextRun})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	ids := make([]string, len(out))
	nexts := make([]*time.Time, len(out))
	for i, f := range out {
		ids[i], nexts[i] = f.Cron.ID, runs.NextRun(f.Cron.Schedule, f.Cron.EndTime, now)
	}
	_, err = tx.Exec(ctx, `UPDATE studio_crons c SET next_run_date = n.next
		FROM unnest($1::text[], $2::timestamptz[]) AS n(id, next) WHERE c.id = n.id`, ids, nexts)
	return out, err
}

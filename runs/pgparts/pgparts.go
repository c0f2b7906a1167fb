// Package pgparts keeps the stream parts of Agent Server API runs in
// Postgres (table studio_run_parts), so that a client connected to one
// Studio replica can follow, join and resume the stream of a run that
// another replica executes.
//
// The process executing a run writes its parts through a pgevents.Writer
// (batched, asynchronous, under the run's lease fence) with the ids its
// own clients see; a run's parts therefore commit in id order, and a
// reader's `seq > cursor` never steps over one. Each append NOTIFYs
// "run_id seq" on the schema's "studio_parts" channel, so the payload
// stays far below NOTIFY's 8000 bytes whatever the parts hold; a
// pgevents.Tailer on Source (one LISTEN connection per process) reads the
// rows. The run's end is one more row, with mode "" (IsEnd).
//
// It knows SQL and pgx only; package runs/riverq maps its parts to
// package runs's.
package pgparts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/superstep-dev/superstep/runs/pgevents"
)

// Channel is the NOTIFY channel's name within the schema (see
// pgevents.ChannelSQL).
const Channel = "studio_parts"

// Source is what a pgevents.Tailer follows to deliver a run's parts: keys
// are run ids, seqs part ids; Decode reads its rows.
var Source = pgevents.Source{Channel: Channel, Read: readRows}

// Part is one stream part of a run. A Mode of "" is the run's end (IsEnd).
type Part struct {
	// ID is the part's id in the run's stream, from 0.
	ID        int64
	Mode      string
	Namespace []string
	// Data is the part's JSON exactly as written (stored as json, not
	// jsonb, so not even key order changes).
	Data json.RawMessage
}

// IsEnd reports whether p is the run's end rather than a part.
func (p Part) IsEnd() bool { return p.Mode == "" }

// header is what precedes a part's data in the bodies a Writer queues and
// a Tailer delivers: a line of JSON, then the data, which json.Marshal
// never breaks over lines.
type header struct {
	ID        int64    `json:"id"`
	Mode      string   `json:"mode"`
	Namespace []string `json:"ns"`
}

// Encode turns p into a body for a pgevents.Writer made with WriterOptions.
func Encode(p Part) []byte {
	h, _ := json.Marshal(header{ID: p.ID, Mode: p.Mode, Namespace: p.Namespace})
	b := make([]byte, 0, len(h)+1+len(p.Data))
	b = append(b, h...)
	b = append(b, '\n')
	return append(b, p.Data...)
}

// Decode reads a body that Encode made or that a Tailer on Source gave.
func Decode(body []byte) (Part, error) {
	i := bytes.IndexByte(body, '\n')
	if i < 0 {
		return Part{}, errors.New("pgparts: a part without its header")
	}
	var h header
	if err := json.Unmarshal(body[:i], &h); err != nil {
		return Part{}, fmt.Errorf("pgparts: read a part's header: %w", err)
	}
	return Part{ID: h.ID, Mode: h.Mode, Namespace: h.Namespace, Data: json.RawMessage(body[i+1:])}, nil
}

// WriterOptions are the options of a pgevents.Writer of run's parts
// (bodies from Encode, in id order) to thread, checking fence on every
// append (0: unfenced); opts, if given, is copied and completed.
func WriterOptions(thread, runID string, fence int64, opts *pgevents.WriterOptions) *pgevents.WriterOptions {
	o := pgevents.WriterOptions{}
	if opts != nil {
		o = *opts
	}
	o.Append = func(ctx context.Context, db pgevents.Batcher, bodies [][]byte) error {
		parts := make([]Part, 0, len(bodies))
		for _, b := range bodies {
			p, err := Decode(b)
			if err != nil {
				return err
			}
			parts = append(parts, p)
		}
		return Append(ctx, db, thread, runID, fence, parts)
	}
	// A batch is in whole or not at all: its first part says which.
	o.Landed = func(ctx context.Context, db pgevents.Batcher, bodies [][]byte) (bool, error) {
		p, err := Decode(bodies[0])
		if err != nil {
			return false, err
		}
		var ok bool
		var b pgx.Batch
		b.Queue(`SELECT EXISTS (SELECT 1 FROM studio_run_parts WHERE run_id = $1 AND seq = $2)`, runID, p.ID).
			QueryRow(func(r pgx.Row) error { return r.Scan(&ok) })
		err = db.SendBatch(ctx, &b).Close()
		return ok, err
	}
	return &o
}

// Append writes parts (in id order, none of them the end) as run's, in
// one implicit transaction: with fence > 0 it first checks that the
// caller still holds thread's lease at that fence, else it writes nothing
// and returns an error wrapping pgevents.ErrFenced. On commit, followers
// of the run are notified.
func Append(ctx context.Context, db pgevents.Batcher, thread, runID string, fence int64, parts []Part) error {
	if len(parts) == 0 {
		return nil
	}
	ids := make([]int64, len(parts))
	modes := make([]string, len(parts))
	nss := make([]string, len(parts))
	data := make([]string, len(parts))
	for i, p := range parts {
		if p.IsEnd() {
			return fmt.Errorf("pgparts: part %d of run %q has no mode", p.ID, runID)
		}
		ids[i], modes[i], data[i] = p.ID, p.Mode, string(p.Data)
		ns, _ := json.Marshal(p.Namespace)
		if p.Namespace == nil {
			ns = []byte("[]")
		}
		nss[i] = string(ns)
	}
	var batch pgx.Batch
	if fence > 0 {
		batch.Queue(sqlFence, thread, fence)
	}
	batch.Queue(sqlInsert, runID, thread, ids, modes, nss, data)
	batch.Queue(sqlNotify, runID+" "+strconv.FormatInt(ids[len(ids)-1], 10))
	if err := db.SendBatch(ctx, &batch).Close(); err != nil {
		return wrap(err, fmt.Sprintf("append %d parts to run %q (thread %q, fence %d)", len(parts), runID, thread, fence))
	}
	return nil
}

// End appends run's end after its last part, once (a second End does
// nothing), unfenced: it is written after the run has released its lease,
// when no other process can write its parts any more. keep says whether
// its parts are kept for late joins (Prune).
func End(ctx context.Context, db pgevents.Batcher, thread, runID string, keep bool) error {
	var batch pgx.Batch
	batch.Queue(sqlEnd, runID, thread, keep)
	batch.Queue(sqlNotifyLast, runID)
	if err := db.SendBatch(ctx, &batch).Close(); err != nil {
		return wrap(err, fmt.Sprintf("end the parts of run %q", runID))
	}
	return nil
}

func wrap(err error, what string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlStateFenced {
		return fmt.Errorf("pgparts: %s: %w", what, pgevents.ErrFenced)
	}
	return fmt.Errorf("pgparts: %s: %w", what, err)
}

// Read returns up to limit of run's parts (its end included, last) with
// an id above after, in order; limit <= 0 means no limit.
func Read(ctx context.Context, db pgevents.Querier, runID string, after int64, limit int) ([]Part, error) {
	rows, err := readRows(ctx, db, runID, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Part, 0, len(rows))
	for _, r := range rows {
		p, err := Decode(r.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func readRows(ctx context.Context, db pgevents.Querier, runID string, after int64, limit int) ([]pgevents.Row, error) {
	var lim any // NULL: LIMIT ALL
	if limit > 0 {
		lim = limit
	}
	rows, err := db.Query(ctx, sqlRead, runID, after, lim)
	if err != nil {
		return nil, fmt.Errorf("pgparts: read run %q after %d: %w", runID, after, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgevents.Row, error) {
		var (
			p    Part
			data string
			at   time.Time
		)
		if err := r.Scan(&p.ID, &p.Mode, &p.Namespace, &data, &at); err != nil {
			return pgevents.Row{}, err
		}
		p.Data = json.RawMessage(data)
		return pgevents.Row{Seq: p.ID, RunID: runID, Body: Encode(p), At: at}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pgparts: read run %q after %d: %w", runID, after, err)
	}
	return out, nil
}

// State reports what is stored of run's stream: the id of its last part
// (-1 for none), whether it has any row at all, and whether it ended.
func State(ctx context.Context, db pgevents.Querier, runID string) (last int64, found, ended bool, err error) {
	rows, err := db.Query(ctx, sqlState, runID)
	if err == nil {
		defer rows.Close()
		if rows.Next() {
			err = rows.Scan(&last, &found, &ended)
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		return 0, false, false, fmt.Errorf("pgparts: read the state of run %q: %w", runID, err)
	}
	return last, found, ended, nil
}

// Prune deletes the parts of ended runs that are no longer kept: every
// run ended more than olderThan ago, the runs whose parts were to be kept
// (End's keep) beyond the keepRuns that ended last, and the others once
// they ended more than unkeptFor ago (a client still reading them live
// gets them meanwhile). Of a run that has not ended, parts older than
// olderThan go but its last stays, from which a takeover numbers on. It
// returns how many rows it deleted.
func Prune(ctx context.Context, db pgevents.Execer, keepRuns int, olderThan, unkeptFor time.Duration) (int64, error) {
	a, err := db.Exec(ctx, sqlPruneEnded, int64(keepRuns), olderThan.Seconds(), unkeptFor.Seconds())
	if err != nil {
		return 0, fmt.Errorf("pgparts: prune the parts of ended runs: %w", err)
	}
	b, err := db.Exec(ctx, sqlPruneOld, olderThan.Seconds())
	if err != nil {
		return a.RowsAffected(), fmt.Errorf("pgparts: prune old parts: %w", err)
	}
	return a.RowsAffected() + b.RowsAffected(), nil
}

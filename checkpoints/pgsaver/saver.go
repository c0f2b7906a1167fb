// Package pgsaver is the Postgres checkpoints.Saver, on a pgx pool. Its
// schema is migrations/003_checkpoints.sql.
//
// # Storage
//
// A checkpoint row holds the checkpoint without its values (jsonb), its
// metadata (jsonb, GIN-indexed with jsonb_path_ops for containment
// filters), a sequence number that orders "latest" and history across
// processes, and for each channel either its value, when it is small
// (at most 128 bytes of JSON: counters, flags, short strings), or the hash
// of the blob holding it. Blobs are content-addressed per thread by the
// xxh3-128 of the value's JSON, so an unchanged channel, a fork and a copy
// of a checkpoint store nothing new. Small values are copied into every
// checkpoint that carries them, as upstream keeps primitives inline: that
// costs a few bytes per checkpoint and saves a blob row, a hash and a
// lookup per change.
//
// A list channel that grows by appending (chat messages) would otherwise
// store the whole list at every step: quadratic in the number of steps,
// upstream's worst storage complaint. When a channel's new value is its
// previous value (as last written by this saver, in the same thread and
// namespace) with elements appended, only the appended elements are stored,
// as a delta on an earlier blob of the same list: skip deltas, which
// bound both the blobs read to rebuild a value (a few dozen for a thread
// of thousands of steps, at most Options.MaxDeltaChain) and the total
// storage (the bytes appended, about once per base-16 digit of the
// thread's length, plus the first full value). Reads rebuild values and
// check each against its hash.
//
// # Transactions and round trips
//
// Put is one round trip: one pipelined batch in an implicit transaction,
// so a checkpoint row is never visible without its blobs. In the common
// case (a child of the checkpoint this saver put last in the thread) the
// saver resolves the unchanged channels from memory and the batch is one
// INSERT, plus the blob rows of changed large values in the same
// statement. PutWrites is one statement. PutStep (checkpoints.StepSaver)
// and PutFrame (checkpoints.FrameSaver, the engine's form) send a
// superstep's writes and its checkpoint in one round trip.
//
// That statement, when it goes alone (a superstep whose values are all
// inline, as most are), is prepared on each connection under a name of
// its own (encodedStatement) and its parameters are encoded by the saver,
// the bytes pgx would send without pgx's lookups (params.go), unless the
// pool's connections have a tracer or do not prepare statements: then pgx
// runs it like any other. Under a fence (a Studio run's superstep) it
// checks the fence itself (sqlPutInlineFenced) and still goes alone. Any
// other put (a value stored as a blob, a special write, a checkpoint
// saved again, one the server resolves) goes as a batch, its fence
// checked first, its parameters still the saver's types, which pgx
// encodes without reflection.
//
// # A step's writes ride on its checkpoint
//
// A step's writes are its parent checkpoint's pending writes. PutStep and
// PutFrame store its regular writes in the new checkpoint's own row
// (parent_writes, migration 015) when the step has no special write and
// the row is plainly inserted (else all of them are rows of
// checkpoint_writes), so a one-task superstep inserts one row,
// which is the floor of a durable superstep. Writes saved on their own
// (PutWrites: a task that finished before its siblings, an interrupt, an
// error) and special writes are rows of checkpoint_writes. A read of a
// checkpoint's pending writes takes both: its rows and what its children
// carry (found through a partial index), and for one task and idx the
// earlier save wins, so regular writes keep the first and special ones the
// last, exactly as when every write was a row. DeleteForRuns turns the
// writes a deleted checkpoint carries for a kept parent into rows, so the
// parent keeps them, as the memory saver does; neither Prune nor
// DeleteThread deletes a child and keeps its parent. (Prune may keep a
// child whose parent it deletes: what that child carries is then read by
// no one.)
//
// "Earlier" is the order in which checkpoints took their seq (and a
// PutWrites checked for a carrying child), not the order of commits.
// With the engine this is the same, since one run at a time writes a
// thread (one process, or the lease's fence). Two processes writing steps
// from one parent at once could see which regular write wins change once
// both have committed; rows of checkpoint_writes alone kept the first
// committed.
//
// # Many threads at once: group commit and pool size
//
// At most Options.MaxTransactions writes (the pool's MaxConns by default)
// are in flight at once, each its own transaction. Writes that arrive
// while that many are in flight wait, and those waiting when one ends go
// together: one round trip and one commit for all of them, each still all
// or nothing (a write the server refuses fails alone; the others are sent
// again without it). Under light load nothing waits and nothing changes;
// under load, threads share commits instead of queueing for connections.
// The saver uses the caller's pool, and pgxpool's default (four
// connections, or one per core if more) is small for many threads: a pool
// of about eight connections per server core, fewer than the threads,
// served 64 threads best on a 2-core server (BenchmarkPGThroughput64).
//
// # Fences
//
// A write whose context carries a checkpoints.Fence (checkpoints.WithFence)
// runs studio_fence(thread, token) (migrations 011 and 016) first in its
// transaction: as the first statement of its batch, or, when a put is one
// statement, in that statement ahead of its insert. The write
// commits only if the thread's lease is at that fence (nobody took the
// thread over since), and holds the lease's lock shared until it does, so
// a takeover waits for it. A refused
// write returns checkpoints.ErrFenced and writes nothing; it is never
// retried. Deletes and other maintenance are not fenced.
//
// Per-thread maintenance (delete, prune, delete for runs) deletes blobs no
// checkpoint reads. It takes an exclusive advisory lock per thread, and a
// Put that references blobs takes the same lock shared before it reads or
// writes anything, so a Put never references a blob that maintenance is
// deleting. A Put whose values are all inline references no blob and takes
// no lock.
package pgsaver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/jsonfast"
	"github.com/superstep-dev/superstep/internal/pgfence"
	"github.com/superstep-dev/superstep/internal/pgretry"
)

// Options tune a Saver. The zero value (or nil) gives the defaults.
type Options struct {
	// MaxDeltaChain caps the deltas between a value and its full snapshot,
	// and so the blobs read to rebuild it: a value whose chain would be
	// longer is stored whole. Default 64, which a thread reaches only
	// after hundreds of thousands of appends (see the package doc).
	MaxDeltaChain int
	// SnapshotRatio is ignored.
	//
	// Deprecated: it started a new snapshot once the deltas since the
	// last one outgrew it this many times, to bound storage; skip deltas
	// keep storage linear without snapshots.
	SnapshotRatio int
	// LastValueCacheBytes bounds the memory used to remember the last
	// value written per channel, which delta storage needs. Default 64
	// MiB; negative disables delta storage.
	LastValueCacheBytes int
	// RetryWindow is how long a round trip that met a transient fault (a
	// connection refused or reset, the server restarting, a serialization
	// failure) is retried before the error is returned, so a run outlives
	// a short database restart. A write whose outcome is unknown (the
	// connection went away after it was sent) is retried only once the
	// database is found not to hold it. Default pgretry.DefaultWindow
	// (30 s); negative: no retry.
	RetryWindow time.Duration
	// MaxTransactions caps the writes (puts and pending writes) in flight
	// at once, each one transaction. A write that arrives while that many
	// are in flight waits, and the writes waiting when one ends are sent
	// together, in one transaction and one round trip (group commit), so
	// that under load many threads' saves share commits rather than queue
	// for connections one by one. Default: the pool's MaxConns; negative:
	// no limit and no grouping.
	MaxTransactions int

	// deltaFanOut is deltaPolicy.fanOut (defaultFanOut); tests set it.
	deltaFanOut int
}

// Saver is the Postgres checkpoints.Saver. It is safe for concurrent use.
type Saver struct {
	pool *pgxpool.Pool
	opts Options
	last *lastValues
	// heads remembers the blob map of the last checkpoint put per thread
	// and namespace (nil when LastValueCacheBytes is negative).
	heads *heads
	// commit runs the writes, grouping them under load.
	commit *committer
}

var (
	_ checkpoints.Saver      = (*Saver)(nil)
	_ checkpoints.StepSaver  = (*Saver)(nil)
	_ checkpoints.FrameSaver = (*Saver)(nil)
)

// New returns a Saver on pool, whose search_path must reach the tables of
// migrations/003_checkpoints.sql.
func New(pool *pgxpool.Pool, opts *Options) *Saver {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxDeltaChain <= 0 {
		o.MaxDeltaChain = 64
	}
	if o.deltaFanOut <= 1 {
		o.deltaFanOut = defaultFanOut
	}
	if o.LastValueCacheBytes == 0 {
		o.LastValueCacheBytes = 64 << 20
	}
	if o.MaxTransactions == 0 {
		o.MaxTransactions = int(pool.Config().MaxConns)
	}
	s := &Saver{pool: pool, opts: o, commit: &committer{pool: pool, limit: o.MaxTransactions, encode: encodes(pool.Config().ConnConfig)}}
	if o.LastValueCacheBytes > 0 {
		s.last = &lastValues{entries: map[valueKey]*lastValue{}, max: o.LastValueCacheBytes}
		s.heads = &heads{entries: map[headKey]head{}, max: 1 << 14}
	}
	return s
}

// inlineMax is the largest value (in bytes of JSON) kept in the checkpoint
// row rather than in a blob. Small values gain nothing from
// content-addressing or deltas, and a blob row costs more than the value.
const inlineMax = 128

// lockClass is the first key of the saver's advisory locks; the second is
// a hash of the thread id. A collision between two threads only makes
// their maintenance wait for each other.
const lockClass = 0x70677376 // "pgsv"

func threadLock(thread string) int32 { return int32(xxh3.HashString(thread)) }

// sqlLockShared is taken by a Put that references blobs, in the same
// implicit transaction and before the statements that read or write them.
const sqlLockShared = `SELECT pg_advisory_xact_lock_shared($1::int, $2::int)`

// sqlWrites saves pending writes of any number of tasks: regular writes
// are first-write-wins, special ones (negative idx) are replaced.
var sqlWrites = sqlInsertWrites + `
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, task_path = excluded.task_path, encoding = excluded.encoding, value = excluded.value
WHERE w.idx < 0`

// sqlInsertWrites is sqlWrites as a plain INSERT, which is what saving
// writes comes to unless they were saved before (a resumed step's task
// saving again): that fails on the primary key, and the writes are sent
// again with sqlWrites. The upsert's speculative insertion would cost
// more than twice the plain insert on every save (EXPLAIN ANALYZE: 130
// against 58 µs for two rows).
var sqlInsertWrites = insertWritesFrom(`unnest($4::text[], $5::text[], $6::int[], $7::text[], $8::bytea[])`)

// insertWritesFrom is the plain insert of the writes that src, a row
// source of (task, path, idx, channel, value), yields from $4 on.
func insertWritesFrom(src string) string {
	return `
INSERT INTO checkpoint_writes AS w (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT $1, $2, $3, x.t, x.i, x.c, x.p, 'json', x.v
FROM ` + src + ` AS x(t, p, i, c, v)
WHERE ` + sqlNotCarried
}

// sqlNotCarried keeps a write x to checkpoint $3 unless a child of $3
// carries a regular write of the same task and idx (parent_writes): that
// one was saved first, and a regular write keeps the first. A task's
// writes are saved before its step's checkpoint exists, so the partial
// index's probe usually finds no child, and no parent_writes is decoded.
var sqlNotCarried = `(x.i < 0 OR NOT ` + sqlCarried("$1", "$2", "$3", "x.t", "x.i", "") + `)`

// sqlCarried is the condition that a child k of checkpoint parent (in
// thread and ns) carries a regular write of task and idx in its
// parent_writes, read as json (which is only scanned, where jsonb would
// be built); more narrows k further.
func sqlCarried(thread, ns, parent, task, idx, more string) string {
	return `EXISTS (
    SELECT 1 FROM checkpoints k CROSS JOIN LATERAL json_array_elements(convert_from(k.parent_writes, 'UTF8')::json) AS kw(w)
    WHERE k.thread_id = ` + thread + ` AND k.checkpoint_ns = ` + ns + ` AND k.parent_checkpoint_id = ` + parent + `
      AND k.parent_writes IS NOT NULL` + more + ` AND kw.w->>0 = ` + task + ` AND (kw.w->>2)::int = ` + idx + `)`
}

// maxValuesRows is the most writes a statement takes as rows of VALUES
// (writeValues) rather than unnested from arrays: a task writes a row or
// two, which the server inserts faster this way, and pgx encodes five
// scalars a row instead of five arrays.
const maxValuesRows = 4

// writeValues is the VALUES list of n writes, each write's task, path,
// idx, channel and value from $4 on.
func writeValues(n int) string {
	var rows strings.Builder
	rows.WriteString("(VALUES ")
	for i := range n {
		if i > 0 {
			rows.WriteString(", ")
		}
		a := 4 + 5*i
		fmt.Fprintf(&rows, "($%d::text, $%d::text, $%d::int, $%d::text, $%d::bytea)", a, a+1, a+2, a+3, a+4)
	}
	rows.WriteString(")")
	return rows.String()
}

// sqlInsertFewWrites[n] is sqlInsertWrites for n writes as VALUES rows.
var sqlInsertFewWrites = func() (out [maxValuesRows + 1]string) {
	for n := 1; n < len(out); n++ {
		out[n] = insertWritesFrom(writeValues(n))
	}
	return out
}()

// queueWrites queues the statement that saves writes against checkpoint
// cp: as a plain insert (few rows as VALUES), or with upsert as sqlWrites.
func queueWrites(b *pgx.Batch, thread, ns, cp string, r *writeRows, upsert bool) {
	if n := len(r.idx); !upsert && n <= maxValuesRows {
		args := make([]any, 0, 3+5*n)
		args = append(args, thread, ns, cp)
		for i := range n {
			args = append(args, r.task[i], r.path[i], r.idx[i], r.ch[i], r.val[i])
		}
		b.Queue(sqlInsertFewWrites[n], args...)
		return
	}
	sql := sqlInsertWrites
	if upsert {
		sql = sqlWrites
	}
	b.Queue(sql, thread, ns, cp, r.task, r.path, r.idx, r.ch, r.val)
}

const checkpointColumns = `thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, checkpoint, metadata,
    value_channels, value_versions, value_hashes, value_inline, parent_writes`

// onConflictCheckpoint replaces a checkpoint saved again, keeping its
// position (seq) and its writes, and the ones it carries for its parent
// while the parent stays the same. Under another parent it carries none:
// sqlReleaseCarried, ahead of it, gave them to the old parent as rows.
const onConflictCheckpoint = `
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = excluded.parent_checkpoint_id, checkpoint = excluded.checkpoint, metadata = excluded.metadata,
    value_channels = excluded.value_channels, value_versions = excluded.value_versions,
    value_hashes = excluded.value_hashes, value_inline = excluded.value_inline,
    parent_writes = CASE WHEN c.parent_checkpoint_id IS NOT DISTINCT FROM excluded.parent_checkpoint_id THEN c.parent_writes END`

// sqlReleaseCarried goes ahead of an upsert of checkpoint $3 under parent
// $4: if the checkpoint is there under another parent, the writes it
// carries for that parent become the parent's rows (carriedToRows), as
// they were written against it.
var sqlReleaseCarried = carriedToRows(
	`c.thread_id = $1 AND c.checkpoint_ns = $2 AND c.checkpoint_id = $3 AND c.parent_checkpoint_id IS DISTINCT FROM nullif($4::text, '')`)

// sqlInsertBlobs is the CTE that stores new blobs ($12..$15) ahead of the
// checkpoint that reads them, in the same statement.
const sqlInsertBlobs = `
WITH b AS (
    INSERT INTO checkpoint_blobs (thread_id, hash, encoding, base, data)
    SELECT $1, x.h, x.e, x.b, x.d FROM unnest($12::bytea[], $13::text[], $14::bytea[], $15::bytea[]) AS x(h, e, b, d)
    ON CONFLICT (thread_id, hash) DO NOTHING
)`

// sqlPutInline is the hot path: a checkpoint whose values are all inline
// and resolved by the client, with the step's writes it carries ($11,
// parent_writes: see writeRows.pack), one row in all. It reads nothing, so it
// plans once. It is a plain INSERT: a checkpoint id saved again (rare:
// the engine never does it in a run) fails on the primary key, and the
// put is sent again as an upsert, its writes as rows of their own.
// Upserting every time would cost a speculative insertion on every put.
const sqlPutInline = `
INSERT INTO checkpoints AS c (` + checkpointColumns + `)
VALUES ($1, $2, $3, nextval('checkpoint_seq'), nullif($4::text, ''), $5::bytea, $6::jsonb,
        $7::text[], $8::bigint[], $9::bytea[], $10::bytea[], $11::bytea)`

// sqlPutInlineFenced is sqlPutInline under a fence ($12, the thread, and
// $13, the token): the lease's check (studio_fence, which takes the
// thread's lease lock shared and raises when the thread is not at the
// fence) runs in the same statement, ahead of the insert, where a batch
// would send it as a statement of its own. So a durable run's superstep
// is one statement too, and the saver encodes its parameters. The CTE is
// MATERIALIZED so that it is a scan the insert reads its one row from,
// never folded away: the check runs before the row is built, and a
// refusal aborts the statement.
const sqlPutInlineFenced = `
WITH fence AS MATERIALIZED (SELECT studio_fence($12, $13))
INSERT INTO checkpoints AS c (` + checkpointColumns + `)
SELECT $1, $2, $3, nextval('checkpoint_seq'), nullif($4::text, ''), $5::bytea, $6::jsonb,
       $7::text[], $8::bigint[], $9::bytea[], $10::bytea[], $11::bytea
FROM fence`

// sqlPutBlobs stores a checkpoint resolved by the client with its new
// blobs and the writes it carries ($11, as sqlPutInline). The blobs it
// carries from its parent ($16) must still exist: if
// one was deleted since the saver remembered it, seq is NULL and the
// statement fails on the NOT NULL constraint (errStaleCache), which aborts
// the whole batch, writes included.
const sqlPutBlobs = sqlInsertBlobs + `
INSERT INTO checkpoints AS c (` + checkpointColumns + `)
SELECT $1, $2, $3,
       CASE WHEN (SELECT count(*) FROM checkpoint_blobs k WHERE k.thread_id = $1 AND k.hash = ANY($16::bytea[]))
                 = cardinality($16::bytea[])
            THEN nextval('checkpoint_seq') END,
       nullif($4::text, ''), $5::bytea, $6::jsonb, $7::text[], $8::bigint[], $9::bytea[], $10::bytea[], $11::bytea`

// sqlPutResolve stores a checkpoint whose unchanged channels ($16, $17)
// the server resolves: the parent's value (or lack of one) when the
// parent has the channel at the same version, else the value of the first
// checkpoint of the thread and namespace that has it at that version,
// else none. It returns the stored value map, which the saver remembers as
// the thread's head. Being an upsert, it carries no writes ($11 is
// NULL): a step saved through it saves them as rows of checkpoint_writes.
const sqlPutResolve = sqlInsertBlobs + `, r AS (
    SELECT n.c, n.v, n.h, n.i FROM unnest($7::text[], $8::bigint[], $9::bytea[], $10::bytea[]) AS n(c, v, h, i)
    UNION ALL
    SELECT u.c, u.v, f.h, f.i
    FROM unnest($16::text[], $17::bigint[]) AS u(c, v)
    LEFT JOIN checkpoints pc ON pc.thread_id = $1 AND pc.checkpoint_ns = $2 AND pc.checkpoint_id = $4
    CROSS JOIN LATERAL (
        (SELECT p.h, p.i FROM unnest(pc.value_channels, pc.value_versions, pc.value_hashes, pc.value_inline) AS p(c, v, h, i)
          WHERE p.c = u.c AND p.v = u.v LIMIT 1)
        UNION ALL
        (SELECT NULL::bytea, NULL::bytea
          WHERE (convert_from(pc.checkpoint, 'UTF8')::jsonb -> 'channel_versions' ->> u.c)::bigint = u.v)
        UNION ALL
        (SELECT q.h, q.i
           FROM checkpoints qc, unnest(qc.value_channels, qc.value_versions, qc.value_hashes, qc.value_inline) AS q(c, v, h, i)
          WHERE qc.thread_id = $1 AND qc.checkpoint_ns = $2 AND q.c = u.c AND q.v = u.v
          ORDER BY qc.seq LIMIT 1)
        LIMIT 1
    ) f
)
INSERT INTO checkpoints AS c (` + checkpointColumns + `)
SELECT $1, $2, $3, nextval('checkpoint_seq'), nullif($4::text, ''), $5::bytea, $6::jsonb,
       coalesce(array_agg(r.c ORDER BY r.c), '{}'), coalesce(array_agg(r.v ORDER BY r.c), '{}'),
       coalesce(array_agg(r.h ORDER BY r.c), '{}'), coalesce(array_agg(r.i ORDER BY r.c), '{}'), $11::bytea
FROM r
WHERE r.h IS NOT NULL OR r.i IS NOT NULL` + onConflictCheckpoint + `
RETURNING value_channels, value_versions, value_hashes, value_inline`

// Put implements checkpoints.Saver.
func (s *Saver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, newVersions map[string]int64) (checkpoints.Config, error) {
	p, err := checkpoints.PreparePut(cfg, cp, md, newVersions)
	if err != nil {
		return checkpoints.Config{}, err
	}
	fence, err := pgfence.For(ctx, p.Config.ThreadID)
	if err != nil {
		return checkpoints.Config{}, err
	}
	in := mapInput(p)
	if err := s.retry(ctx, func(ctx context.Context) error { return s.put(ctx, in, nil, fence) }, s.checkpointLanded(p.Config)); err != nil {
		return checkpoints.Config{}, fmt.Errorf("pgsaver: put checkpoint %s: %w", cp.ID, err)
	}
	return p.Config, nil
}

// retry runs a round trip through pgretry.Do with the saver's window;
// landed is nil for reads.
func (s *Saver) retry(ctx context.Context, run func(context.Context) error, landed func(context.Context) (bool, error)) error {
	return pgretry.Do(ctx, s.opts.RetryWindow, pgretry.Op{Run: run, Landed: landed})
}

const sqlCheckpointExists = `SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3)`

// checkpointLanded tells whether a put whose outcome is unknown committed.
// A put is one transaction (its blobs and, for PutStep, its writes with
// it), so the checkpoint row being there means all of it is.
func (s *Saver) checkpointLanded(cfg checkpoints.Config) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var ok bool
		err := s.pool.QueryRow(ctx, sqlCheckpointExists, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID).Scan(&ok)
		return ok, err
	}
}

// PutStep implements checkpoints.StepSaver: the writes and the checkpoint
// go in one batch, one round trip and one transaction.
func (s *Saver) PutStep(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.TaskWrites, cp *checkpoints.Checkpoint, md checkpoints.Metadata, newVersions map[string]int64) (checkpoints.Config, error) {
	p, err := checkpoints.PreparePut(cfg, cp, md, newVersions)
	if err != nil {
		return checkpoints.Config{}, err
	}
	if err := checkpoints.ValidateStep(cfg, writes); err != nil {
		return checkpoints.Config{}, err
	}
	fence, err := pgfence.For(ctx, p.Config.ThreadID)
	if err != nil {
		return checkpoints.Config{}, err
	}
	in, rows := mapInput(p), stepRows(writes)
	if err := s.retry(ctx, func(ctx context.Context) error { return s.put(ctx, in, rows, fence) }, s.checkpointLanded(p.Config)); err != nil {
		return checkpoints.Config{}, fmt.Errorf("pgsaver: put step with checkpoint %s: %w", cp.ID, err)
	}
	return p.Config, nil
}

// stepRows are the writes of a step as one statement's rows, or nil when
// there are none.
func stepRows(writes []checkpoints.TaskWrites) *writeRows {
	rows := &writeRows{}
	if !rows.addStep(writes) {
		return nil
	}
	return rows
}

// addStep adds the writes of a step, reporting whether there were any.
func (r *writeRows) addStep(writes []checkpoints.TaskWrites) bool {
	n := 0
	for _, tw := range writes {
		n += len(tw.Writes)
	}
	if n == 0 {
		return false
	}
	r.task, r.path, r.idx = slices.Grow(r.task, n), slices.Grow(r.path, n), slices.Grow(r.idx, n)
	r.ch, r.val = slices.Grow(r.ch, n), slices.Grow(r.val, n)
	for _, tw := range writes {
		if len(tw.Writes) > 0 {
			r.add(tw.TaskID, tw.TaskPath, tw.Writes)
		}
	}
	return true
}

// putInput is a checked put in the form plan takes, made from maps (Put,
// PutStep) or from a frame (PutFrame) without building maps.
type putInput struct {
	// cfg is the new checkpoint's thread, namespace and id; parent is the
	// parent's id, "" for none.
	cfg    checkpoints.Config
	parent string
	// body is the checkpoint without its values, encoded as
	// PreparedPut.Body; metadata is the encoded metadata.
	body, metadata []byte
	// channels names the checkpoint's channels in ascending order and
	// versions holds their versions. A channel whose version is 0 has no
	// version (a frame's convention) unless all is set (maps: every
	// channel listed has a version, whatever its value).
	channels []string
	versions []int64
	all      bool
	// fresh lists, by ascending index, the channels whose versions are
	// new (Put's newVersions), with their values (nil: no value).
	fresh []checkpoints.FrameValue
	// owned says the values may be kept as they are (a frame's are the
	// saver's); otherwise what is remembered past the put is copied.
	owned bool
}

// has reports whether channel i has a version in the checkpoint.
func (in *putInput) has(i int) bool { return in.all || in.versions[i] != 0 }

// mapInput is the putInput of a put given as maps.
func mapInput(p *checkpoints.PreparedPut) *putInput {
	in := &putInput{cfg: p.Config, parent: p.Parent, body: p.Body, metadata: p.Metadata, all: true}
	in.channels = make([]string, 0, len(p.Checkpoint.ChannelVersions))
	for ch := range p.Checkpoint.ChannelVersions {
		in.channels = append(in.channels, ch)
	}
	slices.Sort(in.channels)
	in.versions = make([]int64, len(in.channels))
	for i, ch := range in.channels {
		in.versions[i] = p.Checkpoint.ChannelVersions[ch]
		if _, isNew := p.NewVersions[ch]; isNew {
			in.fresh = append(in.fresh, checkpoints.FrameValue{Index: i, Value: p.Values[ch]})
		}
	}
	return in
}

func (s *Saver) put(ctx context.Context, p *putInput, writes *writeRows, fence *checkpoints.Fence) error {
	thread := p.cfg.ThreadID
	useMemory, upsert := true, false
	plan := s.plan(p, writes, fence, useMemory, upsert)
	err := s.exec(ctx, plan)
	if isSavedAgain(err) {
		upsert = true
		plan = s.plan(p, writes, fence, useMemory, upsert)
		err = s.exec(ctx, plan)
	}
	if errors.Is(err, errStaleCache) || isBaseMissing(err) {
		// Another process pruned blobs this saver remembered: resolve
		// everything on the server and store full values.
		s.forget(thread)
		useMemory = false
		plan = s.plan(p, writes, fence, useMemory, upsert)
		err = s.exec(ctx, plan)
	}
	if err != nil {
		s.forget(thread)
		return err
	}
	s.remember(plan)
	return nil
}

// remember keeps what a put that committed leaves for the thread's next
// one: its values for deltas, its value map as the thread's head.
func (s *Saver) remember(plan *putPlan) {
	if s.last == nil {
		return
	}
	for k, v := range plan.remember {
		s.last.put(k, v)
	}
	s.heads.put(headKey{plan.thread, plan.in.cfg.Namespace}, plan.head)
}

type putPlan struct {
	batch pgx.Batch
	// thread is the thread the put writes to.
	thread   string
	remember map[valueKey]*lastValue
	// head is the new checkpoint's value map, remembered so that its child
	// can be resolved without the server's help. When returning is set,
	// the last statement returns it instead.
	head      head
	returning bool
	in        *putInput

	// What follows is the plan's own memory, carved so that a put of a
	// few channels and writes allocates its plan at once: the batch's
	// statements, the checkpoint statement's parameters (params.go) and
	// the rows of its value map.
	queued [4]*pgx.QueuedQuery
	last   pgx.QueuedQuery
	args   [11]any       // sqlPutInline's; a fence's two more reallocate (13 would put every plan a size class up)
	id     [4]textParam  // thread, namespace, checkpoint, parent
	bytes  [2]byteaParam // body, carried
	md     jsonParam
	rows   refRows
	fresh  [4]valueRef
	packed [144]byte // the writes the checkpoint carries
	rowBuf struct {
		ch          [4]string
		ver         [4]int64
		hash, value [4][]byte
	}
}

// blobParams are the parameters of a put that stores or references blobs
// or has the server resolve channels: the new blobs' rows, the blobs the
// checkpoint takes from its parent, and the channels the server resolves.
type blobParams struct {
	hash, base, data byteaArray
	enc              textArray
	parentBlobs      byteaArray
	resolve          struct {
		ch  textArray
		ver int8Array
	}
}

// errStaleCache means a put resolved from remembered state referenced a
// blob that is gone; Put retries with server-side resolution.
var errStaleCache = errors.New("pgsaver: remembered blob is gone")

// forget drops what this saver remembers of threads.
func (s *Saver) forget(threads ...string) {
	if s.last != nil {
		s.last.dropThreads(threads...)
		s.heads.dropThreads(threads...)
	}
}

// refRows are the parallel arrays of a checkpoint's value map.
type refRows struct {
	ch     textArray
	ver    int8Array
	hash   byteaArray
	inline byteaArray
}

// grow makes room for n more rows.
func (r *refRows) grow(n int) {
	r.ch, r.ver = slices.Grow(r.ch, n), slices.Grow(r.ver, n)
	r.hash, r.inline = slices.Grow(r.hash, n), slices.Grow(r.inline, n)
}

// add appends a channel's value: ref, which must stay as it is while the
// rows are sent (a blob's hash is not copied).
func (r *refRows) add(ch string, ref *valueRef) {
	r.ch, r.ver = append(r.ch, ch), append(r.ver, ref.version)
	if ref.inline != nil {
		r.hash, r.inline = append(r.hash, nil), append(r.inline, ref.inline)
	} else {
		r.hash, r.inline = append(r.hash, ref.hash[:]), append(r.inline, nil)
	}
}

func (s *Saver) plan(p *putInput, writes *writeRows, fence *checkpoints.Fence, useMemory, upsert bool) *putPlan {
	thread, ns := p.cfg.ThreadID, p.cfg.Namespace
	plan := &putPlan{thread: thread, in: p}
	plan.batch.QueuedQueries = plan.queued[:0]
	// fresh[k] is the value of p.fresh[k]: none for a new version without
	// a value.
	fresh := plan.fresh[:0]
	if len(p.fresh) > len(plan.fresh) {
		fresh = make([]valueRef, 0, len(p.fresh))
	}
	var bp *blobParams // made by the first that needs it
	blobs := func() *blobParams {
		if bp == nil {
			bp = &blobParams{}
		}
		return bp
	}
	var newHashes []hash
	for _, nv := range p.fresh {
		ver, v := p.versions[nv.Index], nv.Value
		if v == nil {
			fresh = append(fresh, valueRef{version: ver, none: true})
			continue
		}
		if len(v) <= inlineMax {
			if !p.owned {
				v = slices.Clone(v)
			}
			fresh = append(fresh, valueRef{version: ver, inline: v})
			continue
		}
		raw := []byte(v)
		h := hashOf(raw)
		fresh = append(fresh, valueRef{version: ver, hash: h})
		key := valueKey{thread, ns, p.channels[nv.Index]}
		// raw is sent within this Put; only a value remembered past it
		// (for the next delta) is copied, and only when it changed.
		enc, base, data := encJSON, []byte(nil), raw
		prev := s.lastValue(key, useMemory)
		var next *lastValue
		if prev != nil && prev.hash == h {
			next = prev
		} else {
			val := raw
			if !p.owned {
				val = slices.Clone(raw)
			}
			policy := deltaPolicy{fanOut: s.opts.deltaFanOut, maxChain: s.opts.MaxDeltaChain}
			enc, base, data, next = policy.store(prev, h, val)
		}
		if plan.remember == nil {
			plan.remember = map[valueKey]*lastValue{}
		}
		plan.remember[key] = next
		if !slices.Contains(newHashes, h) {
			newHashes = append(newHashes, h)
			hc := h
			bl := blobs()
			bl.hash, bl.enc, bl.base, bl.data = append(bl.hash, hc[:]), append(bl.enc, enc), append(bl.base, base), append(bl.data, data)
		}
	}
	// The common case, a child of the checkpoint this saver put last in
	// the thread: resolve the unchanged channels from memory, and the new
	// checkpoint's value map is the parent's with the fresh values.
	var parentHead head
	if useMemory && s.heads != nil && p.parent != "" {
		if h, ok := s.heads.get(headKey{thread, ns}); ok && h.id == p.parent {
			parentHead = h
		}
	}
	resolved := true
	var refs []headRef
	{
		n := 0
		for i := range p.channels {
			if p.has(i) {
				n++
			}
		}
		refs = make([]headRef, 0, n) // never nil: a head
		k := 0                       // the next of p.fresh
		for i, ch := range p.channels {
			isFresh := k < len(p.fresh) && p.fresh[k].Index == i
			if isFresh {
				k++
			}
			if !p.has(i) {
				continue
			}
			if isFresh {
				refs = append(refs, headRef{channel: ch, valueRef: fresh[k-1]})
				continue
			}
			ref, ok := parentHead.ref(ch)
			if !ok || ref.version != p.versions[i] {
				resolved = false
				break
			}
			refs = append(refs, headRef{channel: ch, valueRef: *ref})
			if ref.blob() && !slices.Contains(newHashes, ref.hash) {
				bl := blobs()
				bl.parentBlobs = append(bl.parentBlobs, ref.hash[:])
			}
		}
	}
	rows := &plan.rows
	rows.ch, rows.ver = plan.rowBuf.ch[:0], plan.rowBuf.ver[:0]
	rows.hash, rows.inline = plan.rowBuf.hash[:0], plan.rowBuf.value[:0]
	if resolved {
		rows.grow(len(refs))
		for j := range refs {
			if !refs[j].none {
				rows.add(refs[j].channel, &refs[j].valueRef)
			}
		}
		plan.head = head{id: p.cfg.CheckpointID, refs: refs}
	} else {
		// Only the new values go; the server resolves the rest.
		bl := blobs()
		bl.parentBlobs = nil
		k := 0
		for i, ch := range p.channels {
			isFresh := k < len(p.fresh) && p.fresh[k].Index == i
			if isFresh {
				k++
			}
			if !p.has(i) {
				continue
			}
			if isFresh {
				if !fresh[k-1].none {
					rows.add(ch, &fresh[k-1])
				}
				continue
			}
			bl.resolve.ch, bl.resolve.ver = append(bl.resolve.ch, ch), append(bl.resolve.ver, p.versions[i])
		}
		plan.returning = true
	}

	b := &plan.batch
	hasBlobs := bp != nil && (len(bp.hash) > 0 || len(bp.parentBlobs) > 0)
	// A step's regular writes ride on its checkpoint's row (parent_writes)
	// when that row is plainly inserted; otherwise, or when a write is
	// special, they are rows of checkpoint_writes, queued first.
	carry := resolved && !upsert && (writes == nil || writes.regular())
	// alone: the checkpoint's statement is the batch's only one, and a
	// fence is checked in it (sqlPutInlineFenced).
	alone := carry && !hasBlobs
	if fence != nil && !alone {
		// First: a refused fence aborts the batch before anything else
		// runs or locks.
		b.Queue(pgfence.SQL, fence.Thread, fence.Token)
	}
	if hasBlobs || !resolved {
		b.Queue(sqlLockShared, lockClass, threadLock(thread))
	}
	var carried []byte
	if writes != nil {
		if carry {
			carried = writes.pack(plan.packed[:0])
		} else {
			queueWrites(b, thread, ns, p.parent, writes, upsert)
		}
	}
	if upsert || !resolved {
		b.Queue(sqlReleaseCarried, thread, ns, p.cfg.CheckpointID, p.parent)
	}
	plan.id = [4]textParam{textParam(thread), textParam(ns), textParam(p.cfg.CheckpointID), textParam(p.parent)}
	plan.bytes, plan.md = [2]byteaParam{p.body, carried}, p.metadata
	args := append(plan.args[:0], &plan.id[0], &plan.id[1], &plan.id[2], &plan.id[3], &plan.bytes[0], &plan.md,
		&rows.ch, &rows.ver, &rows.hash, &rows.inline, &plan.bytes[1])
	plan.last.Arguments = args
	switch {
	case !resolved:
		plan.last.Arguments = append(args, &bp.hash, &bp.enc, &bp.base, &bp.data, &bp.resolve.ch, &bp.resolve.ver)
		plan.last.SQL = sqlPutResolve
	case hasBlobs:
		plan.last.Arguments = append(args, &bp.hash, &bp.enc, &bp.base, &bp.data, &bp.parentBlobs)
		plan.last.SQL = upserting(sqlPutBlobs, upsert)
	case fence != nil && alone:
		plan.last.Arguments = append(args, (*textParam)(&fence.Thread), (*int8Param)(&fence.Token))
		plan.last.SQL = sqlPutInlineFenced
	default:
		plan.last.SQL = upserting(sqlPutInline, upsert)
	}
	b.QueuedQueries = append(b.QueuedQueries, &plan.last)
	return plan
}

func (s *Saver) lastValue(k valueKey, use bool) *lastValue {
	if !use || s.last == nil {
		return nil
	}
	return s.last.get(k)
}

func (s *Saver) exec(ctx context.Context, plan *putPlan) error {
	if !plan.returning {
		return mapPutError(s.commit.do(ctx, plan.thread, &plan.batch, nil))
	}
	var rows struct {
		ch           []string
		ver          []int64
		hash, inline [][]byte
	}
	err := s.commit.do(ctx, plan.thread, &plan.batch, func(br pgx.BatchResults) error {
		for range plan.batch.Len() - 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return br.QueryRow().Scan(&rows.ch, &rows.ver, &rows.hash, &rows.inline)
	})
	if err != nil {
		return mapPutError(err)
	}
	if len(rows.ch) == len(rows.ver) && len(rows.ch) == len(rows.hash) && len(rows.ch) == len(rows.inline) {
		refs := make([]headRef, 0, len(plan.in.channels)) // never nil: a head
		for i, ch := range rows.ch {
			switch {
			case len(rows.hash[i]) == len(hash{}):
				refs = append(refs, headRef{channel: ch, valueRef: valueRef{version: rows.ver[i], hash: hash(rows.hash[i])}})
			case rows.inline[i] != nil:
				refs = append(refs, headRef{channel: ch, valueRef: valueRef{version: rows.ver[i], inline: rows.inline[i]}})
			}
		}
		h := head{id: plan.in.cfg.CheckpointID, refs: refs}
		h.sort()
		n := len(refs)
		for i, ch := range plan.in.channels {
			if _, ok := h.ref(ch); !ok && plan.in.has(i) {
				refs = append(refs, headRef{channel: ch, valueRef: valueRef{version: plan.in.versions[i], none: true}})
			}
		}
		if len(refs) > n {
			h.refs = refs
			h.sort()
		}
		plan.head = h
	}
	return nil
}

var upserts = map[string]string{
	sqlPutInline: sqlPutInline + onConflictCheckpoint,
	sqlPutBlobs:  sqlPutBlobs + onConflictCheckpoint,
}

func upserting(sql string, upsert bool) string {
	if upsert {
		return upserts[sql]
	}
	return sql
}

// isSavedAgain reports a plain insert of a checkpoint id, or of a write,
// that exists.
func isSavedAgain(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" &&
		(pgErr.ConstraintName == "checkpoints_pkey" || pgErr.ConstraintName == "checkpoint_writes_pkey")
}

// mapPutError turns the NOT NULL failure sqlPutBlobs raises on purpose
// into errStaleCache, and a refused fence into checkpoints.ErrFenced.
func mapPutError(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23502" && pgErr.TableName == "checkpoints" && pgErr.ColumnName == "seq" {
		return errStaleCache
	}
	return pgfence.Map(err)
}

func isBaseMissing(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503" && pgErr.TableName == "checkpoint_blobs"
}

// writeRows are pending writes as the parallel arrays sqlWrites takes.
type writeRows struct {
	task, path []string
	idx        []int32
	ch         []string
	val        [][]byte
}

// regular reports whether every write is regular (idx >= 0), so that
// the writes may ride on their step's checkpoint: a special write
// replaces an earlier one, which only checkpoint_writes' upsert does.
func (r *writeRows) regular() bool {
	for _, i := range r.idx {
		if i < 0 {
			return false
		}
	}
	return true
}

// pack appends to b the writes as a checkpoint's parent_writes: a JSON
// array of [task id, task path, idx, channel, value] in order, each value
// as saved (checkpoints.CheckValue: valid JSON, so the array is too).
func (r *writeRows) pack(b []byte) []byte {
	n := 2
	for i := range r.idx {
		n += len(r.task[i]) + len(r.path[i]) + len(r.ch[i]) + len(r.val[i]) + 24
	}
	b = slices.Grow(b, n)
	b = append(b, '[')
	for i, idx := range r.idx {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = jsonfast.AppendString(b, r.task[i])
		b = append(b, ',')
		b = jsonfast.AppendString(b, r.path[i])
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(idx), 10)
		b = append(b, ',')
		b = jsonfast.AppendString(b, r.ch[i])
		b = append(b, ',')
		b = append(b, r.val[i]...)
		b = append(b, ']')
	}
	return append(b, ']')
}

// add appends one task's writes. Within one statement a row can be
// written once, so a slot written twice keeps the first regular write
// and the last special one, as if each were saved in turn.
func (r *writeRows) add(taskID, taskPath string, writes []checkpoints.Write) {
	// Regular writes of a task seen for the first time cannot collide:
	// their indexes are their positions.
	from, again := len(r.idx), slices.Contains(r.task, taskID)
	if again {
		from = 0
	}
	for i, w := range writes {
		idx := int32(checkpoints.WriteIndex(w.Channel, i))
		if idx < 0 || again {
			if at := r.find(from, taskID, idx); at >= 0 {
				if idx < 0 {
					r.ch[at], r.path[at], r.val[at] = w.Channel, taskPath, w.Value
				}
				continue
			}
		}
		r.task, r.path, r.idx = append(r.task, taskID), append(r.path, taskPath), append(r.idx, idx)
		r.ch, r.val = append(r.ch, w.Channel), append(r.val, []byte(w.Value))
	}
}

func (r *writeRows) find(from int, taskID string, idx int32) int {
	for j := from; j < len(r.idx); j++ {
		if r.idx[j] == idx && r.task[j] == taskID {
			return j
		}
	}
	return -1
}

// PutWrites implements checkpoints.Saver. It is one statement.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.Write, taskID, taskPath string) error {
	if err := checkpoints.ValidateWrites(cfg, writes, taskID, taskPath); err != nil {
		return err
	}
	if len(writes) == 0 {
		return nil
	}
	fence, err := pgfence.For(ctx, cfg.ThreadID)
	if err != nil {
		return err
	}
	var r writeRows
	r.add(taskID, taskPath, writes)
	send := func(ctx context.Context, upsert bool) error {
		// A batch is one implicit transaction: the fence's check and row
		// lock cover the insert.
		b := &pgx.Batch{}
		if fence != nil {
			b.Queue(pgfence.SQL, fence.Thread, fence.Token)
		}
		queueWrites(b, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, &r, upsert)
		return s.commit.do(ctx, cfg.ThreadID, b, nil)
	}
	run := func(ctx context.Context) error {
		err := send(ctx, false)
		if isSavedAgain(err) {
			err = send(ctx, true)
		}
		return pgfence.Map(err)
	}
	// The statement (with its fence, the batch) is one transaction: all
	// its rows are there, or none.
	// Under a fence, rows found here either committed under it or are
	// the identical rows of the replica that took over: what this call
	// meant to write either way, and a fenced-out caller's next write is
	// refused.
	landed := func(ctx context.Context) (bool, error) {
		var n int
		err := s.pool.QueryRow(ctx, sqlWritesLanded, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, r.task, r.idx, r.ch, r.val).Scan(&n)
		return n == len(r.idx), err
	}
	if err := s.retry(ctx, run, landed); err != nil {
		return fmt.Errorf("pgsaver: put writes of task %s: %w", taskID, err)
	}
	return nil
}

// execAll reads the results of n statements that return no rows.
func execAll(n int) func(pgx.BatchResults) error {
	return func(br pgx.BatchResults) error {
		for range n {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	}
}

// sqlWritesLanded counts the rows of a PutWrites that are there as sent:
// by slot, channel and value, since a special write (error, interrupt,
// resume) replaces an earlier one in the same slot.
const sqlWritesLanded = `
SELECT count(*) FROM checkpoint_writes w
JOIN unnest($4::text[], $5::int[], $6::text[], $7::bytea[]) AS x(t, i, c, v)
  ON w.task_id = x.t AND w.idx = x.i AND w.channel = x.c AND w.value = x.v
WHERE w.thread_id = $1 AND w.checkpoint_ns = $2 AND w.checkpoint_id = $3`

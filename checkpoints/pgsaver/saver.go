// Package pgsaver is the Postgres checkpoints.Saver, on a pgx pool. Its
// schema is migrations/003_checkpoints.sql.
//
// # Storage
//
// A checkpoint row holds the checkpoint without its values (jsonb), its
// metadata (jsonb, GIN-indexed with jsonb_path_ops for containment
// filters), a per-thread sequence number that orders "latest" and history
// across processes, and for each channel the hash of the blob holding its
// value. Blobs are content-addressed per thread by the xxh3-128 of the
// value's JSON, so an unchanged channel, a fork and a copy of a checkpoint
// store nothing new.
//
// A list channel that grows by appending (chat messages) would otherwise
// store the whole list at every step: quadratic in the number of steps,
// upstream's worst storage complaint. When a channel's new value is its
// previous value (as last written by this saver, in the same thread and
// namespace) with elements appended, only the appended elements are stored,
// as a delta on the previous blob. A full snapshot is stored instead once
// the chain since the last snapshot reaches Options.MaxDeltaChain blobs or
// its deltas outgrow Options.SnapshotRatio times that snapshot, which
// bounds both the rows read to rebuild a value and the total storage (at
// most about 1 + (1+r)/r times the bytes appended, r = SnapshotRatio, until
// the chain cap is reached). Reads rebuild values and check each against
// its hash.
//
// # Transactions
//
// Put is one pipelined batch (one round trip) in an implicit transaction:
// a checkpoint row is never visible without its blobs. PutWrites is one
// round trip too. Per-thread maintenance (delete, copy, prune, delete for
// runs) locks the thread's row in checkpoint_threads, which Put also
// updates, so it never races a Put of the same thread.
package pgsaver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
)

// Options tune a Saver. The zero value (or nil) gives the defaults.
type Options struct {
	// MaxDeltaChain caps the deltas between a value and its full snapshot,
	// and so the blobs read to rebuild it. Default 256.
	MaxDeltaChain int
	// SnapshotRatio starts a new snapshot when the deltas since the last
	// one add up to more than this many times its size. Default 2.
	SnapshotRatio int
	// LastValueCacheBytes bounds the memory used to remember the last
	// value written per channel, which delta storage needs. Default 64
	// MiB; negative disables delta storage.
	LastValueCacheBytes int
}

// Saver is the Postgres checkpoints.Saver. It is safe for concurrent use.
type Saver struct {
	pool *pgxpool.Pool
	opts Options
	last *lastValues
	// heads remembers the blob map of the last checkpoint put per thread
	// and namespace (nil when LastValueCacheBytes is negative).
	heads *heads
}

var _ checkpoints.Saver = (*Saver)(nil)

// New returns a Saver on pool, whose search_path must reach the tables of
// migrations/003_checkpoints.sql.
func New(pool *pgxpool.Pool, opts *Options) *Saver {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxDeltaChain <= 0 {
		o.MaxDeltaChain = 256
	}
	if o.SnapshotRatio <= 0 {
		o.SnapshotRatio = 2
	}
	if o.LastValueCacheBytes == 0 {
		o.LastValueCacheBytes = 64 << 20
	}
	s := &Saver{pool: pool, opts: o}
	if o.LastValueCacheBytes > 0 {
		s.last = &lastValues{entries: map[valueKey]*lastValue{}, max: o.LastValueCacheBytes}
		s.heads = &heads{entries: map[headKey]*head{}, max: 1 << 14}
	}
	return s
}

const sqlBumpSeq = `
INSERT INTO checkpoint_threads AS t (thread_id, last_seq) VALUES ($1, 1)
ON CONFLICT (thread_id) DO UPDATE SET last_seq = t.last_seq + 1`

const sqlInsertBlobs = `
INSERT INTO checkpoint_blobs (thread_id, hash, encoding, base, data)
SELECT $1, x.h, x.e, x.b, x.d FROM unnest($2::bytea[], $3::text[], $4::bytea[], $5::bytea[]) AS x(h, e, b, d)
ON CONFLICT (thread_id, hash) DO NOTHING`

const sqlInsertVersions = `
INSERT INTO checkpoint_channel_versions (thread_id, checkpoint_ns, channel, version, hash)
SELECT $1, $2, x.c, x.v, x.h FROM unnest($3::text[], $4::bigint[], $5::bytea[]) AS x(c, v, h)
ON CONFLICT DO NOTHING`

// sqlInsertCheckpoint resolves the blob of each channel the put does not
// change: the parent's blob when the parent has that channel at the same
// version, else the blob saved for that channel and version.
const sqlInsertCheckpoint = `
INSERT INTO checkpoints AS c (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, run_id,
                              checkpoint, metadata, blob_channels, blob_versions, blob_hashes)
SELECT $1, $2, $3, (SELECT last_seq FROM checkpoint_threads WHERE thread_id = $1), nullif($4::text, ''), nullif($5::text, ''),
       $6::jsonb, $7::jsonb,
       coalesce(array_agg(r.c ORDER BY r.c), '{}'), coalesce(array_agg(r.v ORDER BY r.c), '{}'), coalesce(array_agg(r.h ORDER BY r.c), '{}')
FROM (
    SELECT n.c, n.v, n.h FROM unnest($8::text[], $9::bigint[], $10::bytea[]) AS n(c, v, h)
    UNION ALL
    SELECT u.c, u.v, coalesce(
        (SELECT p.h FROM checkpoints pc, unnest(pc.blob_channels, pc.blob_versions, pc.blob_hashes) AS p(c, v, h)
          WHERE pc.thread_id = $1 AND pc.checkpoint_ns = $2 AND pc.checkpoint_id = $4 AND p.c = u.c AND p.v = u.v),
        (SELECT m.hash FROM checkpoint_channel_versions m
          WHERE m.thread_id = $1 AND m.checkpoint_ns = $2 AND m.channel = u.c AND m.version = u.v))
    FROM unnest($11::text[], $12::bigint[]) AS u(c, v)
) r
WHERE r.h IS NOT NULL
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
    checkpoint = excluded.checkpoint, metadata = excluded.metadata,
    blob_channels = excluded.blob_channels, blob_versions = excluded.blob_versions, blob_hashes = excluded.blob_hashes
RETURNING blob_channels, blob_versions, blob_hashes`

// sqlInsertResolvedCheckpoint inserts a checkpoint whose blobs the client
// resolved. It inserts nothing if one of them is missing (pruned by
// another process since this saver remembered it).
const sqlInsertResolvedCheckpoint = `
INSERT INTO checkpoints AS c (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, run_id,
                              checkpoint, metadata, blob_channels, blob_versions, blob_hashes)
SELECT $1, $2, $3, (SELECT last_seq FROM checkpoint_threads WHERE thread_id = $1), nullif($4::text, ''), nullif($5::text, ''),
       $6::jsonb, $7::jsonb, $8::text[], $9::bigint[], $10::bytea[]
WHERE (SELECT count(*) FROM checkpoint_blobs b WHERE b.thread_id = $1 AND b.hash = ANY($10::bytea[]))
      = (SELECT count(DISTINCT h) FROM unnest($10::bytea[]) AS h)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id,
    checkpoint = excluded.checkpoint, metadata = excluded.metadata,
    blob_channels = excluded.blob_channels, blob_versions = excluded.blob_versions, blob_hashes = excluded.blob_hashes
RETURNING blob_channels, blob_versions, blob_hashes`

// Put implements checkpoints.Saver.
func (s *Saver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, newVersions map[string]int64) (checkpoints.Config, error) {
	p, err := checkpoints.PreparePut(cfg, cp, md, newVersions)
	if err != nil {
		return checkpoints.Config{}, err
	}
	plan := s.plan(p, md.RunID, true)
	err = s.exec(ctx, plan, p.Config.CheckpointID)
	if errors.Is(err, errStaleCache) || isBaseMissing(err) {
		// Another process pruned blobs this saver remembered: resolve
		// everything on the server and store full values.
		s.forget(cfg.ThreadID)
		plan = s.plan(p, md.RunID, false)
		err = s.exec(ctx, plan, p.Config.CheckpointID)
	}
	if err != nil {
		s.forget(cfg.ThreadID)
		return checkpoints.Config{}, fmt.Errorf("pgsaver: put checkpoint %s: %w", cp.ID, err)
	}
	if s.last != nil {
		for k, v := range plan.remember {
			s.last.put(k, v)
		}
		s.heads.put(headKey{cfg.ThreadID, cfg.Namespace}, plan.head)
	}
	return p.Config, nil
}

type putPlan struct {
	batch    *pgx.Batch
	remember map[valueKey]*lastValue
	// head is the new checkpoint's blob map, remembered so that its child
	// can be resolved without the server's help.
	head *head
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

func (s *Saver) plan(p *checkpoints.PreparedPut, runID string, deltas bool) *putPlan {
	thread, ns := p.Config.ThreadID, p.Config.Namespace
	plan := &putPlan{batch: &pgx.Batch{}, remember: map[valueKey]*lastValue{}}
	var bHash, bBase, bData [][]byte
	var bEnc []string
	var vCh []string
	var vVer []int64
	var vHash [][]byte
	var nCh []string
	var nVer []int64
	var nHash [][]byte
	seen := map[hash]bool{}
	for _, ch := range sortedKeys(p.Values) {
		val := slices.Clone([]byte(p.Values[ch]))
		h := hashOf(val)
		vCh, vVer, vHash = append(vCh, ch), append(vVer, p.NewVersions[ch]), append(vHash, h[:])
		if ver, ok := p.Checkpoint.ChannelVersions[ch]; ok {
			nCh, nVer, nHash = append(nCh, ch), append(nVer, ver), append(nHash, h[:])
		}
		key := valueKey{thread, ns, ch}
		next := &lastValue{hash: h, value: val, snapshot: len(val)}
		enc, base, data := encJSON, []byte(nil), val
		if prev := s.lastValue(key, deltas); prev != nil && prev.hash == h {
			next = prev
		} else if prev != nil {
			if d, ok := appendDelta(prev.value, val); ok &&
				prev.depth+1 <= s.opts.MaxDeltaChain &&
				prev.sinceSnapshot+len(d) <= s.opts.SnapshotRatio*prev.snapshot {
				enc, base, data = encAppend, prev.hash[:], d
				next = &lastValue{hash: h, value: val, depth: prev.depth + 1, sinceSnapshot: prev.sinceSnapshot + len(d), snapshot: prev.snapshot}
			}
		}
		plan.remember[key] = next
		if !seen[h] {
			seen[h] = true
			bHash, bEnc, bBase, bData = append(bHash, h[:]), append(bEnc, enc), append(bBase, base), append(bData, data)
		}
	}
	var uCh []string
	var uVer []int64
	for _, ch := range sortedKeys(p.Checkpoint.ChannelVersions) {
		if _, isNew := p.NewVersions[ch]; !isNew {
			uCh, uVer = append(uCh, ch), append(uVer, p.Checkpoint.ChannelVersions[ch])
		}
	}
	// The common case, a child of the checkpoint this saver put last in
	// the thread: resolve the unchanged channels from memory, which keeps
	// the statement simple enough to plan once.
	var parentHead *head
	if deltas && s.last != nil && p.Parent != "" {
		if h := s.heads.get(headKey{thread, ns}); h != nil && h.id == p.Parent {
			parentHead = h
		}
	}
	resolved := parentHead != nil || len(uCh) == 0
	if parentHead != nil {
		for i, ch := range uCh {
			ref, ok := parentHead.refs[ch]
			if !ok || ref.version != uVer[i] {
				resolved = false
				break
			}
			nCh, nVer, nHash = append(nCh, ch), append(nVer, uVer[i]), append(nHash, ref.hash[:])
		}
	}
	b := plan.batch
	b.Queue(sqlBumpSeq, thread)
	if len(bHash) > 0 {
		b.Queue(sqlInsertBlobs, thread, bHash, bEnc, bBase, bData)
		b.Queue(sqlInsertVersions, thread, ns, vCh, vVer, vHash)
	}
	if resolved {
		nCh, nVer, nHash = sortRefs(nCh, nVer, nHash)
		b.Queue(sqlInsertResolvedCheckpoint, thread, ns, p.Config.CheckpointID, p.Parent, runID, string(p.Body), string(p.Metadata),
			nonNil(nCh), nonNil(nVer), nonNil(nHash))
	} else {
		b.Queue(sqlInsertCheckpoint, thread, ns, p.Config.CheckpointID, p.Parent, runID, string(p.Body), string(p.Metadata),
			nonNil(nCh), nonNil(nVer), nonNil(nHash), nonNil(uCh), nonNil(uVer))
	}
	return plan
}

func (s *Saver) lastValue(k valueKey, use bool) *lastValue {
	if !use || s.last == nil {
		return nil
	}
	return s.last.get(k)
}

func (s *Saver) exec(ctx context.Context, plan *putPlan, id string) error {
	br := s.pool.SendBatch(ctx, plan.batch)
	for range plan.batch.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
	}
	// The checkpoint insert returns the blob map it stored; no row means
	// a blob the client resolved is gone.
	var chs []string
	var vers []int64
	var hashes [][]byte
	err := br.QueryRow().Scan(&chs, &vers, &hashes)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return errStaleCache
	}
	if err != nil {
		return err
	}
	if len(chs) == len(vers) && len(chs) == len(hashes) {
		plan.head = &head{id: id, refs: make(map[string]blobRef, len(chs))}
		for i, ch := range chs {
			if len(hashes[i]) == len(hash{}) {
				plan.head.refs[ch] = blobRef{version: vers[i], hash: hash(hashes[i])}
			}
		}
	}
	return nil
}

// sortRefs sorts parallel channel, version and hash slices by channel.
func sortRefs(chs []string, vers []int64, hashes [][]byte) ([]string, []int64, [][]byte) {
	idx := make([]int, len(chs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(chs[a], chs[b]) })
	c, v, h := make([]string, len(idx)), make([]int64, len(idx)), make([][]byte, len(idx))
	for i, j := range idx {
		c[i], v[i], h[i] = chs[j], vers[j], hashes[j]
	}
	return c, v, h
}

func isBaseMissing(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503" && pgErr.TableName == "checkpoint_blobs"
}

const sqlInsertWrites = `
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT $1, $2, $3, $4, x.i, x.c, $5, 'json', x.v FROM unnest($6::int[], $7::text[], $8::bytea[]) AS x(i, c, v)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING`

const sqlUpsertWrites = `
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, task_path, encoding, value)
SELECT $1, $2, $3, $4, x.i, x.c, $5, 'json', x.v FROM unnest($6::int[], $7::text[], $8::bytea[]) AS x(i, c, v)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = excluded.channel, task_path = excluded.task_path, encoding = excluded.encoding, value = excluded.value`

// PutWrites implements checkpoints.Saver.
func (s *Saver) PutWrites(ctx context.Context, cfg checkpoints.Config, writes []checkpoints.Write, taskID, taskPath string) error {
	if err := checkpoints.ValidateWrites(cfg, writes, taskID, taskPath); err != nil {
		return err
	}
	type rows struct {
		idx []int32
		ch  []string
		val [][]byte
	}
	var regular, special rows
	for i, w := range writes {
		idx := int32(checkpoints.WriteIndex(w.Channel, i))
		r := &regular
		if idx < 0 {
			r = &special
			// Within one call the last special write to a slot wins, as
			// if each were saved in turn.
			if at := slices.Index(r.idx, idx); at >= 0 {
				r.val[at] = w.Value
				continue
			}
		}
		r.idx, r.ch, r.val = append(r.idx, idx), append(r.ch, w.Channel), append(r.val, []byte(w.Value))
	}
	b := &pgx.Batch{}
	for _, q := range []struct {
		sql string
		r   rows
	}{{sqlInsertWrites, regular}, {sqlUpsertWrites, special}} {
		if len(q.r.idx) > 0 {
			b.Queue(q.sql, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID, taskID, taskPath, q.r.idx, q.r.ch, q.r.val)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgsaver: put writes of task %s: %w", taskID, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nonNil turns a nil slice into an empty one, which pgx sends as '{}'
// rather than NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

package pgsaver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/slab"
)

// sqlGet reads one checkpoint with its values' blobs (whole delta chains,
// through a recursive CTE) and its pending writes in one statement. %s is
// the condition that picks the checkpoint. Each blob is fetched by its key
// in a LATERAL subquery that OFFSET 0 keeps from being flattened, so the
// plan is one index lookup per blob whatever the table statistics say (a
// freshly filled table otherwise gets a hash join that scans the thread's
// blobs once per chain link). The chain is a UNION ALL: UNION would hash
// every row, data included, to drop the duplicates that two channels
// sharing blobs produce, which cost more than sending them; the depth
// bound (maxChainRead) stops a cycle, which only tampering can make.
const sqlGet = `
WITH RECURSIVE c AS (
    SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata, value_channels, value_hashes, value_inline
    FROM checkpoints
    WHERE thread_id = $1 AND checkpoint_ns = $2 %s
), chain AS (
    SELECT b.hash, b.encoding, b.base, b.data, 1 AS depth
    FROM c, unnest(c.value_hashes) AS h(hash) CROSS JOIN LATERAL (
        SELECT * FROM checkpoint_blobs b WHERE b.thread_id = $1 AND b.hash = h.hash OFFSET 0
    ) b
    UNION ALL
    SELECT b.hash, b.encoding, b.base, b.data, chain.depth + 1
    FROM chain CROSS JOIN LATERAL (
        SELECT * FROM checkpoint_blobs b WHERE b.thread_id = $1 AND b.hash = chain.base OFFSET 0
    ) b
    WHERE chain.depth < ` + maxChainRead + `
)
SELECT c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint, c.metadata, c.value_channels, c.value_hashes, c.value_inline,
       bl.hashes, bl.encodings, bl.bases, bl.datas, ` + sqlWritesColumns + `
FROM c
CROSS JOIN LATERAL (
    SELECT array_agg(hash), array_agg(encoding), array_agg(base), array_agg(data) FROM chain
) AS bl(hashes, encodings, bases, datas)` + sqlWritesOfC

// sqlWritesOfC joins checkpoint c (by c.thread_id and c.checkpoint_ns)
// to its pending writes, as sqlWritesColumns: its rows of
// checkpoint_writes in order, and the parent_writes of its children that
// carry some, in the order they were saved (rowData.pendingWrites).
const sqlWritesOfC = `
CROSS JOIN LATERAL (
    SELECT array_agg(w.task_id ORDER BY w.task_id, w.idx), array_agg(w.idx ORDER BY w.task_id, w.idx),
           array_agg(w.channel ORDER BY w.task_id, w.idx), array_agg(w.encoding ORDER BY w.task_id, w.idx),
           array_agg(w.value ORDER BY w.task_id, w.idx)
    FROM checkpoint_writes w
    WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id
) AS w(tasks, idxs, channels, encodings, vals)
CROSS JOIN LATERAL (
    SELECT array_agg(k.parent_writes ORDER BY k.seq) FROM checkpoints k
    WHERE k.thread_id = c.thread_id AND k.checkpoint_ns = c.checkpoint_ns AND k.parent_checkpoint_id = c.checkpoint_id
      AND k.parent_writes IS NOT NULL
) AS k(carried)`

const sqlWritesColumns = `w.tasks, w.idxs, w.channels, w.encodings, w.vals, k.carried`

// maxChainRead bounds the blobs a read follows from one value: far more
// than any chain Options.MaxDeltaChain allows.
const maxChainRead = "100000"

var (
	sqlGetByID   = fmt.Sprintf(sqlGet, "AND checkpoint_id = $3")
	sqlGetLatest = fmt.Sprintf(sqlGet, "ORDER BY seq DESC LIMIT 1")
)

// Get implements checkpoints.Saver.
func (s *Saver) Get(ctx context.Context, cfg checkpoints.Config) (*checkpoints.Tuple, error) {
	if cfg.ThreadID == "" || !checkpoints.ValidText(cfg.ThreadID) || !checkpoints.ValidText(cfg.Namespace) || !checkpoints.ValidText(cfg.CheckpointID) {
		return nil, nil
	}
	var r rowData
	var values map[hash][]byte
	found := false
	err := s.retry(ctx, func(ctx context.Context) error {
		var rows pgx.Rows
		var err error
		if cfg.CheckpointID != "" {
			rows, err = s.pool.Query(ctx, sqlGetByID, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID)
		} else {
			rows, err = s.pool.Query(ctx, sqlGetLatest, cfg.ThreadID, cfg.Namespace)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		if found = rows.Next(); !found {
			return rows.Err()
		}
		// The blobs are read in the driver's memory: only the values
		// rebuilt from them are kept, before the rows close.
		r = rowData{}
		var bHash, bEnc, bBase, bData []pgtype.DriverBytes
		if err := rows.Scan(&r.id, &r.parent, &r.body, &r.metadata, &r.channels, &r.hashes, &r.inline,
			&bHash, &bEnc, &bBase, &bData, &r.wTasks, &r.wIdx, &r.wChannels, &r.wEncodings, &r.wValues, &r.carried); err != nil {
			return err
		}
		if values, err = rebuild(r.hashes, bHash, bEnc, bBase, bData); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	}, nil)
	if errors.Is(err, ErrCorrupt) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("pgsaver: get %+v: %w", cfg, err)
	}
	if !found {
		return nil, nil
	}
	r.thread, r.ns = cfg.ThreadID, cfg.Namespace
	return r.tuple(values, newListDecoder(1), &checkpoints.Metadata{})
}

// rebuild returns the values of the wanted hashes from the blobs of their
// delta chains, as a read returns them in the driver's memory (parallel
// columns). The values are the caller's: a value stored whole, which is
// the blob's own bytes, is copied.
func rebuild(wanted [][]byte, hashes, encs, bases, datas []pgtype.DriverBytes) (map[hash][]byte, error) {
	blobs := make(map[hash]storedBlob, len(hashes))
	for i, h := range hashes {
		if len(h) == len(hash{}) {
			blobs[hash(h)] = storedBlob{encoding: encodingOf(encs[i]), base: bases[i], data: datas[i]}
		}
	}
	values, err := resolveBlobs(blobs, wanted)
	if err != nil {
		return nil, err
	}
	var copied []hash
	for _, w := range wanted {
		if len(w) != len(hash{}) || slices.Contains(copied, hash(w)) {
			continue
		}
		if h := hash(w); blobs[h].encoding == encJSON {
			values[h], copied = slices.Clone(values[h]), append(copied, h)
		}
	}
	return values, nil
}

// encodingOf is a blob's encoding column as a string, without allocating
// for the known ones.
func encodingOf(b []byte) string {
	switch string(b) {
	case encJSON:
		return encJSON
	case encAppend:
		return encAppend
	}
	return string(b)
}

// rowData is a checkpoint row as scanned.
type rowData struct {
	thread, ns, id string
	parent         *string
	body, metadata []byte
	channels       []string
	hashes         [][]byte
	inline         [][]byte
	wTasks         []string
	wIdx           []int32
	wChannels      []string
	wEncodings     []string
	wValues        [][]byte
	// carried are the parent_writes of the checkpoint's children that
	// carry writes for it, in the order they were saved.
	carried [][]byte
}

// tuple builds the row's tuple, decoding its body and metadata with dec;
// prev is the metadata of the row before it, whose strings it shares.
func (r *rowData) tuple(values map[hash][]byte, dec *listDecoder, prev *checkpoints.Metadata) (*checkpoints.Tuple, error) {
	t := &checkpoints.Tuple{
		Config:     checkpoints.Config{ThreadID: r.thread, Namespace: r.ns, CheckpointID: r.id},
		Checkpoint: &checkpoints.Checkpoint{},
	}
	if err := dec.body(r.body, t.Checkpoint, r.id); err != nil {
		return nil, fmt.Errorf("%w: checkpoint %s: %v", ErrCorrupt, r.id, err)
	}
	if err := dec.metadata(&t.Metadata, prev, r.metadata); err != nil {
		return nil, fmt.Errorf("%w: metadata of %s: %v", ErrCorrupt, r.id, err)
	}
	if t.Metadata.Parents == nil {
		t.Metadata.Parents = map[string]string{} // as UnmarshalJSON leaves it
	}
	if r.parent != nil {
		t.ParentConfig = &checkpoints.Config{ThreadID: r.thread, Namespace: r.ns, CheckpointID: *r.parent}
	}
	if len(r.channels) != len(r.hashes) || len(r.channels) != len(r.inline) {
		return nil, fmt.Errorf("%w: checkpoint %s has %d channels, %d blob keys and %d inline values",
			ErrCorrupt, r.id, len(r.channels), len(r.hashes), len(r.inline))
	}
	t.Checkpoint.ChannelValues = make(map[string]json.RawMessage, len(r.channels))
	for i, ch := range r.channels {
		if v := r.inline[i]; v != nil {
			if r.hashes[i] != nil || !json.Valid(v) {
				return nil, fmt.Errorf("%w: checkpoint %s: inline value of %q is not valid JSON", ErrCorrupt, r.id, ch)
			}
			t.Checkpoint.ChannelValues[ch] = json.RawMessage(v)
			continue
		}
		var v []byte
		ok := len(r.hashes[i]) == len(hash{})
		if ok {
			v, ok = values[hash(r.hashes[i])]
		}
		if !ok {
			return nil, fmt.Errorf("%w: checkpoint %s: value of %q is missing", ErrCorrupt, r.id, ch)
		}
		t.Checkpoint.ChannelValues[ch] = json.RawMessage(v)
	}
	pw, err := r.pendingWrites()
	if err != nil {
		return nil, err
	}
	t.PendingWrites = pw
	return t, nil
}

// pendingWrites merges the checkpoint's rows of checkpoint_writes with
// the writes its children carry, ordered by task and idx as rows are. For
// one task and idx the earlier save wins: a row of checkpoint_writes (a
// carried write is only ever regular, and PutWrites skips a regular write
// a child carries, so a row for the same slot was saved before it), then
// children in the order they were saved.
func (r *rowData) pendingWrites() ([]checkpoints.PendingWrite, error) {
	if len(r.wTasks) != len(r.wIdx) || len(r.wTasks) != len(r.wChannels) || len(r.wTasks) != len(r.wEncodings) || len(r.wTasks) != len(r.wValues) {
		return nil, fmt.Errorf("%w: writes of checkpoint %s have columns of different lengths", ErrCorrupt, r.id)
	}
	var out []checkpoints.PendingWrite
	for i, task := range r.wTasks {
		if r.wEncodings[i] != encJSON || !json.Valid(r.wValues[i]) {
			return nil, fmt.Errorf("%w: write %d of checkpoint %s has encoding %q", ErrCorrupt, i, r.id, r.wEncodings[i])
		}
		out = append(out, checkpoints.PendingWrite{TaskID: task, Channel: r.wChannels[i], Value: r.wValues[i]})
	}
	if len(r.carried) == 0 {
		return out, nil
	}
	type slot struct {
		task string
		idx  int32
	}
	type indexed struct {
		slot
		w checkpoints.PendingWrite
	}
	// The row's own writes, then each child's in the order they were
	// saved: sorted stably by slot, the first of a slot is the one that
	// counts (a regular write keeps the first).
	all := make([]indexed, len(out), len(out)+4)
	for i, w := range out {
		all[i] = indexed{slot{w.TaskID, r.wIdx[i]}, w}
	}
	for _, packed := range r.carried {
		ws, err := unpackWrites(packed)
		if err != nil {
			return nil, fmt.Errorf("%w: writes carried for checkpoint %s: %v", ErrCorrupt, r.id, err)
		}
		for _, w := range ws {
			all = append(all, indexed{slot{w.task, w.idx}, checkpoints.PendingWrite{TaskID: w.task, Channel: w.channel, Value: w.value}})
		}
	}
	slices.SortStableFunc(all, func(a, b indexed) int {
		if c := strings.Compare(a.task, b.task); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	all = slices.CompactFunc(all, func(a, b indexed) bool { return a.slot == b.slot })
	out = out[:0]
	for _, w := range all {
		out = append(out, w.w)
	}
	return out, nil
}

// carriedWrite is one write of a checkpoint's parent_writes (its task
// path, which a pending write does not keep, is only checked).
type carriedWrite struct {
	task, channel string
	idx           int32
	value         json.RawMessage
}

// unpackWrites decodes parent_writes, as writeRows.pack encodes them.
func unpackWrites(b []byte) ([]carriedWrite, error) {
	var rows [][]json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, err
	}
	out := make([]carriedWrite, len(rows))
	for i, row := range rows {
		if len(row) != 5 {
			return nil, fmt.Errorf("write %d has %d fields, want 5", i, len(row))
		}
		w := &out[i]
		var path string
		for j, dst := range []any{&w.task, &path, &w.idx, &w.channel} {
			if err := json.Unmarshal(row[j], dst); err != nil {
				return nil, fmt.Errorf("write %d, field %d: %v", i, j, err)
			}
		}
		if w.idx < 0 {
			return nil, fmt.Errorf("write %d is special (idx %d)", i, w.idx)
		}
		w.value = row[4]
	}
	return out, nil
}

// List implements checkpoints.Saver.
func (s *Saver) List(ctx context.Context, q checkpoints.ListQuery, opts checkpoints.ListOptions) ([]*checkpoints.Tuple, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("%w: limit %d is negative", checkpoints.ErrInvalidFilter, opts.Limit)
	}
	filter, err := checkpoints.EncodeFilter(opts.Filter)
	if err != nil {
		return nil, err
	}
	if !checkpoints.ValidText(q.ThreadID) || !checkpoints.ValidText(q.Namespace) || !checkpoints.ValidText(opts.Before) {
		return nil, nil
	}
	opts.MetadataOnly = opts.MetadataOnly || opts.Headers
	sql, args := buildList(q, opts, filter)
	var out []*checkpoints.Tuple
	if opts.MetadataOnly {
		err := s.retry(ctx, func(ctx context.Context) error {
			rows, err := s.pool.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			out, err = collectHeaders(rows, opts.Headers, min(opts.Limit, 1000))
			return err
		}, nil)
		if err != nil {
			return nil, fmt.Errorf("pgsaver: list: %w", err)
		}
		return out, nil
	}
	// Rows and blobs must come from one snapshot, or a concurrent prune
	// could remove a blob between the two reads.
	err = s.retry(ctx, func(ctx context.Context) error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, sql, args...)
			if err != nil {
				return err
			}
			out, err = collectTuples(rows, func(datas []*rowData) (map[hash][]byte, error) {
				return loadBlobs(ctx, tx, datas)
			})
			return err
		})
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("pgsaver: list: %w", err)
	}
	return out, nil
}

// buildList writes the listing query. Every value is a parameter; only
// fixed SQL fragments are concatenated.
func buildList(q checkpoints.ListQuery, opts checkpoints.ListOptions, filter []byte) (string, []any) {
	var sb strings.Builder
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// A metadata-only listing reads the metadata as the raw index scan
	// does: taking its known keys out in SQL instead (one jsonb operator
	// a key) cost the server more than decoding the object costs the
	// client.
	sb.WriteString("SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint, c.metadata")
	if opts.MetadataOnly {
		sb.WriteString("\nFROM checkpoints c")
	} else {
		sb.WriteString(`, c.value_channels, c.value_hashes, c.value_inline, ` + sqlWritesColumns + `
FROM checkpoints c` + sqlWritesOfC)
	}
	sb.WriteString("\nWHERE true")
	var thread string
	if q.ThreadID != "" {
		thread = arg(q.ThreadID)
		sb.WriteString(" AND c.thread_id = " + thread)
	}
	if !q.AllNamespaces {
		sb.WriteString(" AND c.checkpoint_ns = " + arg(q.Namespace))
	}
	if filter != nil {
		sb.WriteString(" AND c.metadata @> " + arg(string(filter)) + "::jsonb")
	}
	if opts.Before != "" {
		before := arg(opts.Before)
		if thread != "" {
			// A position in the thread's sequence when Before is one of
			// its checkpoints, else an id comparison.
			sb.WriteString(" AND coalesce(c.seq < (SELECT b.seq FROM checkpoints b WHERE b.thread_id = " + thread +
				" AND b.checkpoint_id = " + before + " ORDER BY b.seq DESC LIMIT 1), c.checkpoint_id < " + before + ")")
		} else {
			sb.WriteString(" AND c.checkpoint_id < " + before)
		}
	}
	if thread != "" {
		// seq is unique in a thread, so the (thread, ns, seq) index gives
		// a page without sorting the thread.
		sb.WriteString("\nORDER BY c.seq DESC")
	} else {
		sb.WriteString("\nORDER BY c.checkpoint_id DESC, c.thread_id, c.checkpoint_ns")
	}
	if opts.Limit > 0 {
		sb.WriteString(" LIMIT " + arg(opts.Limit))
	}
	return sb.String(), args
}

func collectTuples(rows pgx.Rows, load func([]*rowData) (map[hash][]byte, error)) ([]*checkpoints.Tuple, error) {
	var datas []*rowData
	for rows.Next() {
		r := &rowData{}
		if err := rows.Scan(&r.thread, &r.ns, &r.id, &r.parent, &r.body, &r.metadata,
			&r.channels, &r.hashes, &r.inline, &r.wTasks, &r.wIdx, &r.wChannels, &r.wEncodings, &r.wValues, &r.carried); err != nil {
			rows.Close()
			return nil, err
		}
		datas = append(datas, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var values map[hash][]byte
	if len(datas) > 0 {
		var err error
		if values, err = load(datas); err != nil {
			return nil, err
		}
	}
	out := make([]*checkpoints.Tuple, len(datas))
	dec, prev := newListDecoder(len(datas)), &checkpoints.Metadata{}
	for i, r := range datas {
		t, err := r.tuple(values, dec, prev)
		if err != nil {
			return nil, err
		}
		out[i], prev = t, &t.Metadata
	}
	return out, nil
}

// sqlLoadBlobs reads the blobs of the listed values' delta chains. The
// chains of a page of checkpoints share most of their blobs (every skip
// delta chain of a list runs down to the same snapshot and spine), so,
// unlike sqlGet's, the walk follows keys only, through a UNION that keeps
// each blob once (and ends a cycle, which only tampering can make), and
// the blobs' data is read once per blob at the end: a UNION ALL of whole
// rows sent a page of 50 checkpoints' shared blobs dozens of times.
const sqlLoadBlobs = `
WITH RECURSIVE chain(thread_id, hash, base) AS (
    SELECT b.thread_id, b.hash, b.base
    FROM unnest($1::text[], $2::bytea[]) AS k(t, h) CROSS JOIN LATERAL (
        SELECT b.thread_id, b.hash, b.base FROM checkpoint_blobs b WHERE b.thread_id = k.t AND b.hash = k.h OFFSET 0
    ) b
    UNION
    SELECT b.thread_id, b.hash, b.base
    FROM chain CROSS JOIN LATERAL (
        SELECT b.thread_id, b.hash, b.base FROM checkpoint_blobs b WHERE b.thread_id = chain.thread_id AND b.hash = chain.base OFFSET 0
    ) b
)
SELECT b.thread_id, b.hash, b.encoding, b.base, b.data
FROM chain CROSS JOIN LATERAL (
    SELECT b.thread_id, b.hash, b.encoding, b.base, b.data FROM checkpoint_blobs b WHERE b.thread_id = chain.thread_id AND b.hash = chain.hash OFFSET 0
) b`

// loadBlobs reads and rebuilds the values of the listed checkpoints. Blobs
// are per thread; a hash names the same content in every thread, so the
// rebuilt values are keyed by hash alone.
func loadBlobs(ctx context.Context, tx pgx.Tx, datas []*rowData) (map[hash][]byte, error) {
	var threads []string
	var hashes [][]byte
	seen := map[string]map[hash]bool{}
	for _, r := range datas {
		if seen[r.thread] == nil {
			seen[r.thread] = map[hash]bool{}
		}
		for _, h := range r.hashes {
			if len(h) == len(hash{}) && !seen[r.thread][hash(h)] {
				seen[r.thread][hash(h)] = true
				threads, hashes = append(threads, r.thread), append(hashes, h)
			}
		}
	}
	if len(hashes) == 0 {
		return map[hash][]byte{}, nil
	}
	rows, err := tx.Query(ctx, sqlLoadBlobs, threads, hashes)
	if err != nil {
		return nil, err
	}
	blobs := map[hash]storedBlob{}
	for rows.Next() {
		var thread, enc string
		var h, base, data []byte
		if err := rows.Scan(&thread, &h, &enc, &base, &data); err != nil {
			rows.Close()
			return nil, err
		}
		if len(h) == len(hash{}) {
			blobs[hash(h)] = storedBlob{encoding: enc, base: base, data: data}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return resolveBlobs(blobs, hashes)
}

// header is what a Headers listing keeps of a checkpoint body.
type header struct {
	V    int       `json:"v"`
	ID   string    `json:"id"`
	TS   time.Time `json:"ts"`
	Next []string  `json:"next"`
}

// collectHeaders reads the rows of a metadata-only listing (columns:
// thread, namespace, id, parent, body, metadata). A page is bound by
// decoding and allocation, so the columns are read in the driver's
// memory, bodies and metadata are decoded in one pass each (listDecoder),
// the tuples, checkpoints and parent configs of a page are allocated
// together (headerRow, sizeHint of them to begin with), and strings
// repeated from row to row (thread, namespace, channel and node names,
// source, run id, extra keys and strings, an id that was the previous
// row's parent) are shared. The results are those of a full listing's
// rows (rowData.tuple) without values; with headers only the checkpoint's
// V, ID, TS and Next are decoded (listDecoder.header), and an empty
// Parents may be left nil (checkpoints.ListOptions).
func collectHeaders(rows pgx.Rows, headers bool, sizeHint int) ([]*checkpoints.Tuple, error) {
	defer rows.Close()
	page := make([]headerRow, 0, sizeHint)
	// The columns' bytes as the server sent them are what the row holds
	// when the body (bytea) came in binary and the metadata (jsonb) in
	// text, as pgx asks for them by default: then the row is read raw, as
	// the floor reads it, without Scan's per-column plans. Any other
	// format (a pool set to the simple protocol, say) goes through Scan.
	fds := rows.FieldDescriptions()
	raw := len(fds) == 6 && fds[4].Format == pgtype.BinaryFormatCode && fds[5].Format == pgtype.TextFormatCode
	dec := newListDecoder(sizeHint)
	ids := slab.Sized[byte](sizeHint * idLen) // the parent ids
	last := &checkpoints.Tuple{}              // the previous row, whose strings are shared
	lastParent := ""                          // the parent id last read, which is often this row's id
	var cols [6][]byte
	var scan *scanColumns // made for the first row when not raw
	for rows.Next() {
		if raw {
			copy(cols[:], rows.RawValues())
		} else {
			if scan == nil {
				scan = newScanColumns()
			}
			if err := scan.read(rows, &cols); err != nil {
				return nil, err
			}
		}
		thread, ns, id, parent, body, metadata := cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
		// A row of the page's capacity is zero already: taking it
		// instead of appending a zero row spares writing it again.
		if len(page) < cap(page) {
			page = page[:len(page)+1]
		} else {
			page = append(page, headerRow{})
		}
		row := &page[len(page)-1]
		t, cp := &row.t, &row.cp
		t.Config = checkpoints.Config{
			ThreadID: share(thread, last.Config.ThreadID), Namespace: share(ns, last.Config.Namespace), CheckpointID: share(id, lastParent),
		}
		var err error
		if headers {
			err = dec.header(body, cp, t.Config.CheckpointID)
		} else {
			err = dec.body(body, cp, t.Config.CheckpointID)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: checkpoint %s: %v", ErrCorrupt, t.Config.CheckpointID, err)
		}
		md := &t.Metadata
		if err := dec.metadata(md, &last.Metadata, metadata); err != nil {
			return nil, fmt.Errorf("%w: metadata of %s: %v", ErrCorrupt, t.Config.CheckpointID, err)
		}
		if md.Parents == nil && !headers {
			md.Parents = map[string]string{}
		}
		if parent != nil {
			// The tuple points at its parent config once the page's
			// slice stops growing.
			lastParent = slab.String(&ids, parent)
			row.parent = checkpoints.Config{ThreadID: t.Config.ThreadID, Namespace: t.Config.Namespace, CheckpointID: lastParent}
		}
		last = t
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*checkpoints.Tuple, len(page))
	for i := range page {
		row := &page[i]
		row.t.Checkpoint = &row.cp
		if row.parent.CheckpointID != "" {
			row.t.ParentConfig = &row.parent
		}
		out[i] = &row.t
	}
	return out, nil
}

// scanColumns reads a metadata-only listing's rows through Scan, in the
// driver's memory as RawValues gives it, for pages not read raw. Its
// variables are made once a page: a page read raw makes none.
type scanColumns struct {
	c    [6]pgtype.DriverBytes
	dest []any
}

func newScanColumns() *scanColumns {
	s := &scanColumns{}
	s.dest = []any{&s.c[0], &s.c[1], &s.c[2], &s.c[3], &s.c[4], &s.c[5]}
	return s
}

func (s *scanColumns) read(rows pgx.Rows, cols *[6][]byte) error {
	if err := rows.Scan(s.dest...); err != nil {
		return err
	}
	for i := range s.c {
		cols[i] = s.c[i]
	}
	return nil
}

// headerRow is the storage of one tuple of a metadata-only listing: a
// page's are one allocation.
type headerRow struct {
	t      checkpoints.Tuple
	cp     checkpoints.Checkpoint
	parent checkpoints.Config
}

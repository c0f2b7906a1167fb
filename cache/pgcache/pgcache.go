// Package pgcache is the Postgres implementation of cache.Cache, on the
// node_cache table of migrations/004_node_cache.sql.
//
// # Integrity
//
// A cache entry is replayed into a graph's state without running the node,
// so whoever can write the table can decide what a node "returned"
// (upstream's CVE-2026-27794 went further: its cache unpickled entries).
// Every row therefore carries an HMAC-SHA256 over its namespace, key,
// times and value, under a key the database never sees (Options.Key). A
// row whose MAC does not verify (tampered, forged, or written under another
// key) is treated as a miss, deleted, and never handed to a decoder: the
// engine re-runs the node and caches a fresh, signed result.
//
// Without Options.Key each process draws a random key, so entries written
// by another process or before a restart are misses (and are deleted when
// read). Several processes sharing a cache must share a key.
//
// # Time
//
// Expiry is decided by Options.Now, passed to every query as a parameter
// (SQL's now() is never used), so one clock governs Set and Get, and tests
// control it. Postgres stores microseconds: creation times are truncated to
// the microsecond and expiry times rounded up, so an entry never expires
// early. Processes whose clocks disagree disagree on expiry by that skew.
package pgcache

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/internal/pgretry"
)

// MinKeySize is the shortest Options.Key accepted: HMAC-SHA256 keys
// shorter than the hash output weaken the MAC.
const MinKeySize = 32

// ErrKeyTooShort is returned by New when Options.Key is set but shorter
// than MinKeySize.
var ErrKeyTooShort = errors.New("pgcache: HMAC key too short")

// Options configure New. The zero value (or nil) gives a cache with a
// random per-process key, the wall clock, and no background sweeper.
type Options struct {
	// Key authenticates entries with HMAC-SHA256; at least MinKeySize
	// random bytes. Empty means a random key for this process only (see
	// the package documentation). The slice is copied.
	Key []byte
	// Now is the clock that decides creation and expiry; nil means
	// time.Now.
	Now func() time.Time
	// SweepInterval, when positive, starts a goroutine that deletes expired
	// rows at this interval until Close. Reads hide expired rows either
	// way; sweeping only reclaims their space.
	SweepInterval time.Duration
	// OnSweep, when set, is called after every background sweep with the
	// number of rows removed and the error, if any: the package never logs,
	// so this is how a failing sweeper becomes visible.
	OnSweep func(removed int, err error)
	// RetryWindow is how long a read or write that met a transient
	// database fault (connection refused or reset, a server restart) is
	// retried before the error is returned (and the run that asked
	// fails); a write whose outcome is unknown is sent again only if its
	// rows are not there. 0 means pgretry.DefaultWindow (30 s); negative,
	// no retry.
	RetryWindow time.Duration
}

// Cache is a cache.Cache on Postgres. It is safe for concurrent use.
type Cache struct {
	pool   *pgxpool.Pool
	now    func() time.Time
	signer *signer
	window time.Duration

	sweeping *cache.Sweeping
}

var (
	_ cache.Cache   = (*Cache)(nil)
	_ cache.Sweeper = (*Cache)(nil)
)

// New returns a cache on pool, whose schema must be migrated (package
// migrations). When opts.SweepInterval is positive it also starts the
// background sweeper; call Close to stop it. Close does not close pool.
func New(pool *pgxpool.Pool, opts *Options) (*Cache, error) {
	if pool == nil {
		return nil, errors.New("pgcache: New needs a pool, got nil")
	}
	if opts == nil {
		opts = &Options{}
	}
	key := opts.Key
	switch {
	case len(key) == 0:
		key = make([]byte, MinKeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("pgcache: draw a random HMAC key: %w", err)
		}
	case len(key) < MinKeySize:
		return nil, fmt.Errorf("%w: Options.Key has %d bytes; use at least %d random bytes", ErrKeyTooShort, len(key), MinKeySize)
	}
	c := &Cache{
		pool:   pool,
		now:    opts.Now,
		signer: newSigner(key),
		window: opts.RetryWindow,
	}
	if c.now == nil {
		c.now = time.Now
	}
	c.sweeping = cache.StartSweeping(opts.SweepInterval, c, opts.OnSweep)
	return c, nil
}

// Close stops the background sweeper, if any (cancelling a sweep in
// progress), and waits for it to return. The cache stays usable; Close is
// safe to call more than once.
func (c *Cache) Close() error {
	c.sweeping.Close()
	return nil
}

// clock returns the current time at the resolution Postgres stores.
func (c *Cache) clock() time.Time {
	return c.now().Truncate(time.Microsecond)
}

// Get returns the values of the keys that are present, unexpired and
// authentic, in one query. Rows that fail authentication are deleted.
func (c *Cache) Get(ctx context.Context, keys []cache.Key) (map[cache.Key][]byte, error) {
	for _, k := range keys {
		if err := k.Validate(); err != nil {
			return nil, err
		}
	}
	out := make(map[cache.Key][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	namespaces := make([]string, len(keys))
	names := make([]string, len(keys))
	for i, k := range keys {
		namespaces[i], names[i] = k.Namespace, k.Key
	}
	var forged []forgedRow
	err := pgretry.Do(ctx, c.window, pgretry.Op{Run: func(ctx context.Context) error {
		clear(out)
		forged = forged[:0]
		return c.get(ctx, namespaces, names, out, &forged)
	}})
	if err != nil {
		return nil, fmt.Errorf("pgcache: get %d keys: %w", len(keys), err)
	}
	if err := c.deleteForged(ctx, forged); err != nil {
		return nil, err
	}
	return out, nil
}

// get reads the rows of the keys into out, and the rows that fail
// authentication into forged: one round trip, retried whole.
func (c *Cache) get(ctx context.Context, namespaces, names []string, out map[cache.Key][]byte, forged *[]forgedRow) error {
	rows, err := c.pool.Query(ctx, sqlGet, namespaces, names, c.clock())
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		k       cache.Key
		value   []byte
		mac     []byte
		created time.Time
		expires pgtype.Timestamptz
	)
	for rows.Next() {
		if err := rows.Scan(&k.Namespace, &k.Key, &value, &mac, &created, &expires); err != nil {
			return fmt.Errorf("read a row: %w", err)
		}
		digest := sha256.Sum256(value)
		if !c.signer.valid(mac, k.Namespace, k.Key, created, expiresTime(expires), &digest) {
			*forged = append(*forged, forgedRow{k, mac})
			mac = nil // kept by forged; the next Scan must not reuse it
			continue
		}
		if value == nil {
			value = []byte{}
		}
		out[k] = value
		value = nil // the next Scan must not reuse the slice just handed out
	}
	return rows.Err()
}

// forgedRow identifies a row that failed authentication, by its MAC too,
// so that deleting it cannot remove a valid entry written meanwhile.
type forgedRow struct {
	key cache.Key
	mac []byte
}

func (c *Cache) deleteForged(ctx context.Context, forged []forgedRow) error {
	if len(forged) == 0 {
		return nil
	}
	namespaces := make([]string, len(forged))
	names := make([]string, len(forged))
	macs := make([][]byte, len(forged))
	for i, f := range forged {
		namespaces[i], names[i], macs[i] = f.key.Namespace, f.key.Key, f.mac
	}
	if _, err := c.pool.Exec(ctx, sqlDeleteForged, namespaces, names, macs); err != nil {
		return fmt.Errorf("pgcache: delete %d rows that failed authentication: %w", len(forged), err)
	}
	return nil
}

// Set stores the entries in one statement, replacing existing ones; each
// gets a new creation time and expiry. When one key appears more than
// once, the last entry wins. Nothing is stored if any entry is invalid.
func (c *Cache) Set(ctx context.Context, entries []cache.Entry) error {
	for _, e := range entries {
		if err := e.Validate(); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		return nil
	}
	entries = lastPerKey(entries)
	created := c.clock()
	n := len(entries)
	namespaces := make([]string, n)
	names := make([]string, n)
	values := make([][]byte, n)
	macs := make([][]byte, n)
	expiries := make([]pgtype.Timestamptz, n)
	macBuf := make([]byte, 0, n*macSize)
	for i, e := range entries {
		var expires time.Time
		if e.TTL > 0 {
			expires = roundUpMicro(created.Add(e.TTL))
			expiries[i] = pgtype.Timestamptz{Time: expires, Valid: true}
		}
		digest := sha256.Sum256(e.Value)
		start := len(macBuf)
		macBuf = c.signer.sum(macBuf, e.Key.Namespace, e.Key.Key, created, expires, &digest)
		namespaces[i], names[i], macs[i] = e.Key.Namespace, e.Key.Key, macBuf[start:len(macBuf):len(macBuf)]
		values[i] = e.Value
		if values[i] == nil {
			values[i] = []byte{} // the column is NOT NULL; nil would encode as NULL
		}
	}
	set := func(ctx context.Context) error {
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			_, err = c.pool.Exec(ctx, sqlSet, namespaces, names, values, macs, created, expiries)
			if !isDeadlock(err) {
				break
			}
		}
		return err
	}
	// The upsert is one statement: its rows, with these MACs, are all
	// there or none is.
	landed := func(ctx context.Context) (bool, error) {
		var got int
		err := c.pool.QueryRow(ctx, sqlSetLanded, namespaces, names, macs).Scan(&got)
		return got == n, err
	}
	if err := pgretry.Do(ctx, c.window, pgretry.Op{Run: set, Landed: landed}); err != nil {
		return fmt.Errorf("pgcache: set %d entries: %w", n, err)
	}
	return nil
}

// lastPerKey drops all but the last entry of each key (one upsert cannot
// touch a row twice) and sorts by key, so concurrent multi-row Sets lock
// rows in the same order and do not deadlock one another.
func lastPerKey(entries []cache.Entry) []cache.Entry {
	out := make([]cache.Entry, 0, len(entries))
	if len(entries) == 1 {
		return append(out, entries[0])
	}
	seen := make(map[cache.Key]int, len(entries))
	for _, e := range entries {
		if i, ok := seen[e.Key]; ok {
			out[i] = e
			continue
		}
		seen[e.Key] = len(out)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b cache.Entry) int {
		return cmp.Or(cmp.Compare(a.Key.Namespace, b.Key.Namespace), cmp.Compare(a.Key.Key, b.Key.Key))
	})
	return out
}

func isDeadlock(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}

// Clear removes every entry of the namespaces, or every entry at all when
// none are given.
func (c *Cache) Clear(ctx context.Context, namespaces []string) error {
	for _, ns := range namespaces {
		if err := cache.ValidateNamespace(ns); err != nil {
			return err
		}
	}
	var err error
	if len(namespaces) == 0 {
		_, err = c.pool.Exec(ctx, sqlClearAll)
	} else {
		_, err = c.pool.Exec(ctx, sqlClearNamespaces, namespaces)
	}
	if err != nil {
		return fmt.Errorf("pgcache: clear %d namespaces (0 = all): %w", len(namespaces), err)
	}
	return nil
}

// List describes the unexpired, authentic entries of a namespace ("" =
// all), newest first (ties by namespace, then key, bytewise), at most limit
// (0 = no limit). Values are not read: Postgres hashes them for the MAC
// check. Rows that fail authentication are deleted and left out.
func (c *Cache) List(ctx context.Context, namespace string, limit int) ([]cache.Info, error) {
	if namespace != "" {
		if err := cache.ValidateNamespace(namespace); err != nil {
			return nil, err
		}
	}
	if err := cache.ValidateLimit(limit); err != nil {
		return nil, err
	}
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	// Deleting forged rows can leave a limited page short; reading again
	// fills it. Each round deletes what it skipped, so a second round only
	// repeats when rows are being forged while we list.
	for round := 0; ; round++ {
		infos, forged, err := c.list(ctx, namespace, lim)
		if err != nil {
			return nil, err
		}
		if err := c.deleteForged(ctx, forged); err != nil {
			return nil, err
		}
		if len(forged) == 0 || limit == 0 || len(infos)+len(forged) < limit || round == 2 {
			return infos, nil
		}
	}
}

func (c *Cache) list(ctx context.Context, namespace string, limit *int64) ([]cache.Info, []forgedRow, error) {
	now := c.clock()
	var (
		rows pgx.Rows
		err  error
	)
	if namespace == "" {
		rows, err = c.pool.Query(ctx, sqlListAll, now, limit)
	} else {
		rows, err = c.pool.Query(ctx, sqlListNamespace, namespace, now, limit)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pgcache: list %q: %w", namespace, err)
	}
	defer rows.Close()
	var (
		infos  []cache.Info
		forged []forgedRow
	)
	for rows.Next() {
		var (
			info    cache.Info
			digest  []byte
			mac     []byte
			expires pgtype.Timestamptz
		)
		if err := rows.Scan(&info.Key.Namespace, &info.Key.Key, &info.Size, &digest, &mac, &info.CreatedAt, &expires); err != nil {
			return nil, nil, fmt.Errorf("pgcache: list %q: read a row: %w", namespace, err)
		}
		info.ExpiresAt = expiresTime(expires)
		if len(digest) != sha256.Size {
			return nil, nil, fmt.Errorf("pgcache: list %q: Postgres sha256() gave %d bytes, want %d", namespace, len(digest), sha256.Size)
		}
		d := [sha256.Size]byte(digest)
		if !c.signer.valid(mac, info.Key.Namespace, info.Key.Key, info.CreatedAt, info.ExpiresAt, &d) {
			forged = append(forged, forgedRow{info.Key, mac})
			continue
		}
		infos = append(infos, info)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("pgcache: list %q: %w", namespace, err)
	}
	return infos, forged, nil
}

// sweepBatch bounds how many rows one DELETE of a sweep removes, so a
// sweep of a large backlog never holds many row locks at once.
const sweepBatch = 5000

// Sweep deletes the expired rows, in batches, and reports how many it
// deleted.
func (c *Cache) Sweep(ctx context.Context) (int, error) {
	now := c.clock()
	total := 0
	for {
		tag, err := c.pool.Exec(ctx, sqlSweep, now, sweepBatch)
		if err != nil {
			return total, fmt.Errorf("pgcache: sweep rows expired by %v: %w", now, err)
		}
		n := int(tag.RowsAffected())
		total += n
		if n < sweepBatch {
			return total, nil
		}
	}
}

func expiresTime(ts pgtype.Timestamptz) time.Time {
	if !ts.Valid {
		return time.Time{}
	}
	return ts.Time
}

// roundUpMicro rounds t up to the microsecond Postgres can store, so that
// storing an expiry never shortens an entry's life.
func roundUpMicro(t time.Time) time.Time {
	r := t.Truncate(time.Microsecond)
	if r.Before(t) {
		r = r.Add(time.Microsecond)
	}
	return r
}

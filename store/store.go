package store

import (
	"context"
	"fmt"
	"time"
)

// Store is long-term memory: namespaced JSON items with typed filters, TTL
// and semantic search. Batch is the one primitive; Get, Search, Put,
// Delete and ListNamespaces are helpers over it that work on any Store.
//
// Within one Batch every read (GetOp, SearchOp, ListNamespacesOp) sees the
// state before the batch's writes; the PutOps are applied last, together,
// with the last PutOp for a (namespace, key) winning. An invalid op fails
// the whole batch before anything is read or written.
type Store interface {
	// Batch executes ops and returns one Result per op, in order.
	Batch(ctx context.Context, ops []Op) ([]Result, error)
	// Sweep deletes expired items (and their vectors) and reports how
	// many. Reads never return expired items even before a sweep; Sweep
	// only reclaims space.
	Sweep(ctx context.Context) (int, error)
}

// Options configure a store. The zero value is a store without semantic
// search and without a default TTL, on the wall clock.
type Options struct {
	// Index enables semantic search; nil disables it.
	Index *IndexConfig
	// TTL sets the default time to live and refresh behaviour.
	TTL TTLConfig
	// Now is the clock; nil means time.Now. Tests pass a fake clock so TTL
	// behaviour is checked without sleeping.
	Now func() time.Time
}

// IndexConfig configures what is embedded and with which model.
type IndexConfig struct {
	// Embedder makes the vectors. Its Name and Dim are recorded with the
	// stored vectors.
	Embedder Embedder
	// Fields are the paths (see ParsePath) embedded when a PutOp has a nil
	// Index; nil means {"$"}, the whole document.
	Fields []string
	// Reembed, when the stored vectors were made by another embedder or
	// dimension, re-embeds every item at open instead of failing with
	// ErrEmbedderMismatch.
	Reembed bool
}

// TTLConfig sets time-to-live defaults. Upstream counts TTLs in float
// minutes; a time.Duration carries its unit, so 90*time.Minute is what
// upstream writes as 90.
type TTLConfig struct {
	// Default applies to PutOps with TTL 0; 0 means no default expiry.
	Default time.Duration
	// NoRefreshOnRead stops reads from extending the TTL of the items they
	// return (upstream's refresh_on_read=False). Ops can override it.
	NoRefreshOnRead bool
	// SweepInterval is how often RunSweeper deletes expired items; 0
	// means DefaultSweepInterval.
	SweepInterval time.Duration
}

// DefaultSweepInterval is the sweep period when TTLConfig leaves it 0.
const DefaultSweepInterval = 5 * time.Minute

// Validate reports a configuration error, e.g. an unparsable field path.
func (o Options) Validate() error {
	if o.TTL.Default < 0 {
		return fmt.Errorf("%w: default TTL %v is negative", ErrInvalidOp, o.TTL.Default)
	}
	if o.Index == nil {
		return nil
	}
	if o.Index.Embedder == nil {
		return fmt.Errorf("%w: IndexConfig has no Embedder", ErrInvalidOp)
	}
	if o.Index.Embedder.Dim() <= 0 {
		return fmt.Errorf("%w: embedder %q reports dimension %d", ErrEmbedder, o.Index.Embedder.Name(), o.Index.Embedder.Dim())
	}
	for _, f := range o.Index.Fields {
		if _, err := ParsePath(f); err != nil {
			return fmt.Errorf("index field: %w", err)
		}
	}
	return nil
}

// Clock returns the configured clock as a function giving UTC times at
// the microsecond precision Postgres stores, so both implementations hand
// back identical timestamps.
func (o Options) Clock() func() time.Time {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return func() time.Time { return now().UTC().Truncate(time.Microsecond) }
}

// DefaultFields returns the index fields of puts with a nil Index.
func (o Options) DefaultFields() []string {
	if o.Index == nil {
		return nil
	}
	if o.Index.Fields == nil {
		return []string{"$"}
	}
	return o.Index.Fields
}

// Do runs one op and returns its result.
func Do(ctx context.Context, s Store, op Op) (Result, error) {
	res, err := s.Batch(ctx, []Op{op})
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// Get returns the item, or nil when it does not exist or has expired.
func Get(ctx context.Context, s Store, namespace []string, key string) (*Item, error) {
	r, err := Do(ctx, s, GetOp{Namespace: namespace, Key: key})
	return r.Item, err
}

// Search runs a SearchOp.
func Search(ctx context.Context, s Store, op SearchOp) ([]SearchItem, error) {
	r, err := Do(ctx, s, op)
	return r.Items, err
}

// Put stores value under (namespace, key) with the store's default index
// fields and TTL. Use Do with a PutOp for anything else.
func Put(ctx context.Context, s Store, namespace []string, key string, value map[string]any) error {
	if value == nil {
		return fmt.Errorf("%w: Put with a nil value; use Delete", ErrInvalidValue)
	}
	_, err := Do(ctx, s, PutOp{Namespace: namespace, Key: key, Value: value})
	return err
}

// Delete removes the item and its vectors; deleting a missing item is not
// an error.
func Delete(ctx context.Context, s Store, namespace []string, key string) error {
	_, err := Do(ctx, s, PutOp{Namespace: namespace, Key: key})
	return err
}

// ListNamespaces runs a ListNamespacesOp.
func ListNamespaces(ctx context.Context, s Store, op ListNamespacesOp) ([][]string, error) {
	r, err := Do(ctx, s, op)
	return r.Namespaces, err
}

// RunSweeper calls s.Sweep every interval (DefaultSweepInterval when 0)
// until ctx is done. Errors go to onError when it is non-nil; the sweeper
// keeps running.
func RunSweeper(ctx context.Context, s Store, interval time.Duration, onError func(error)) {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}

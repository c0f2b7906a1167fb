package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgtext"
	"github.com/superstep-dev/superstep/internal/textcut"
)

// ThreadStore is the thread registry: what the Manager knows about each
// thread, kept where it survives a restart. The checkpoints hold a
// thread's state; the registry holds what they do not: which graph the
// thread belongs to, how its last run ended, and the options a resume
// reuses. An interrupted thread's pending interrupts are not kept here:
// they live in its checkpoints and the Manager reads them from there.
//
// Implementations: MemoryThreads in this package, package runs/pgthreads
// for Postgres; both pass the conformance suite in runs/runstest. Every
// method checks its input with CheckThreadRecord or CheckThreadFilter, so
// the implementations accept and refuse exactly the same things.
type ThreadStore interface {
	// SaveThread creates the thread's record or replaces it. Times are
	// kept to the microsecond (Postgres' precision), in UTC. Created is
	// the store's to keep: a new thread's is rec.Created, or the store's
	// clock when that is zero; a saved thread keeps its stored one
	// whatever rec says. The store stamps it, not the Manager, because
	// only the store knows whether a thread is new: a thread made by the
	// API and one made by a Studio run go through different Managers.
	SaveThread(ctx context.Context, rec ThreadRecord) error
	// GetThread returns a thread's record; ErrUnknownThread when there is
	// none, ErrInvalidInput when id cannot be a thread id.
	GetThread(ctx context.Context, id string) (ThreadRecord, error)
	// ListThreads returns the records f selects in f's order (by default
	// most recently updated first; ties by id, bytewise, ascending),
	// skipping f.Offset of them, at most f.Limit of them (0: all).
	ListThreads(ctx context.Context, f ThreadFilter) ([]ThreadRecord, error)
	// CountThreads returns how many records f selects, ignoring its
	// limit, offset and order.
	CountThreads(ctx context.Context, f ThreadFilter) (int, error)
	// DeleteThread removes a thread's record (not its checkpoints or run
	// log); ErrUnknownThread when there is none.
	DeleteThread(ctx context.Context, id string) error
	// Heartbeat records that the Manager owner is alive at at. A Manager
	// beats every HeartbeatInterval while it runs; a running thread whose
	// owner has not beaten within OwnerTimeout is an orphan.
	Heartbeat(ctx context.Context, owner string, at time.Time) error
	// Orphans returns the running threads whose owner has no heartbeat
	// after at-within (or no owner at all), oldest update first: runs
	// that no live process is executing. A Manager that starts settles
	// them from their checkpoints; the threads of another live Manager
	// sharing the registry are left alone.
	Orphans(ctx context.Context, at time.Time, within time.Duration) ([]ThreadRecord, error)
	// SettleThread replaces the record of thread rec.ID with rec only if
	// it is still running with owner and runID (an orphan as Orphans
	// read it), and reports whether it did: two Managers settling the
	// same orphan, or one settling it after another started a run on it,
	// never overwrite a newer record.
	SettleThread(ctx context.Context, rec ThreadRecord, owner, runID string) (bool, error)
}

// ThreadRecord is what a ThreadStore keeps of one thread.
type ThreadRecord struct {
	// ID is the thread's id, as the graph's checkpoints know it.
	ID string
	// Graph is the registered graph the thread belongs to, for its
	// whole life once set. It is "" for a thread made without a run
	// (the Agent Server API's POST /threads) until its first run binds
	// it; such a thread is idle with no RunID.
	Graph string
	// Status is how the thread's last run stands.
	Status Status
	// RunID is the thread's active or last run.
	RunID string
	// Error is why the last run failed ("cancelled" for a cancelled one),
	// at most MaxErrorBytes.
	Error string
	// Updated is when the thread last changed; lists are newest first.
	Updated time.Time
	// Before and After name the breakpoint nodes the last run stopped at.
	Before, After []string
	// Options are the last run's options; a resume reuses them.
	Options StartOptions
	// Owner is the Manager executing the thread's run while Status is
	// running (its instance id; see Heartbeat), "" otherwise.
	Owner string
	// Metadata is the user's metadata of the thread (the API's
	// Thread.metadata): a JSON object of at most MaxMetadataBytes. Stores
	// read it back as encoding/json decodes into any: objects as
	// map[string]any, arrays as []any, numbers as float64 (so integers
	// beyond ±2^53 lose precision, as they do in most JSON readers). An
	// empty object reads back as nil.
	Metadata map[string]any
	// Created is when the thread was first saved (see SaveThread).
	Created time.Time
	// StateUpdated is when a run or an edit last wrote one of the
	// thread's checkpoints; zero when none has. The Manager sets it.
	StateUpdated time.Time
}

// Liveness of a registry's owners (see ThreadStore.Heartbeat).
const (
	// HeartbeatInterval is how often a Manager says it is alive.
	HeartbeatInterval = 10 * time.Second
	// OwnerTimeout is how long an owner's silence takes to make its
	// running threads orphans: three missed beats.
	OwnerTimeout = 3 * HeartbeatInterval
)

// Limits on a ThreadRecord; CheckThreadRecord enforces them.
const (
	// MaxErrorBytes caps a thread's error text; the Manager cuts longer
	// run errors to it.
	MaxErrorBytes = 8 << 10
	// MaxNodeNames caps each list of node names in a record.
	MaxNodeNames = 1024
	// MaxNodeNameBytes caps one node name in a record.
	MaxNodeNameBytes = 256
	// MaxMetadataBytes caps a record's metadata, and a filter's, as
	// compact JSON.
	MaxMetadataBytes = 64 << 10
	// MaxMetadataDepth caps how deeply metadata nests: deeper documents
	// exhaust Postgres' parser stack (a 5xx, not a 422) long before the
	// size limit.
	MaxMetadataDepth = 64
	// MaxFilterIDs caps ThreadFilter.IDs.
	MaxFilterIDs = 1000
)

// CheckThreadRecord reports why rec cannot be stored, or nil when it can.
// Errors wrap ErrInvalidInput and name the field.
func CheckThreadRecord(rec ThreadRecord) error {
	if err := CheckThreadID(rec.ID); err != nil {
		return err
	}
	if rec.Graph != "" && !validName.MatchString(rec.Graph) {
		return fmt.Errorf("%w: thread %q: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, rec.ID, clip(rec.Graph))
	}
	if !slices.Contains(Statuses, rec.Status) {
		return fmt.Errorf("%w: thread %q: unknown status %q", ErrInvalidInput, rec.ID, clip(string(rec.Status)))
	}
	// Only a run binds a graph, so a thread without one has never run.
	if rec.Graph == "" && (rec.Status != StatusIdle || rec.RunID != "") {
		return fmt.Errorf("%w: thread %q: no graph, yet status %q and run id %q: a thread without a graph is idle and has no run", ErrInvalidInput, rec.ID, rec.Status, clip(rec.RunID))
	}
	if _, err := normalizeMetadata(rec.Metadata); err != nil {
		return fmt.Errorf("%w: thread %q: %v", ErrInvalidInput, rec.ID, err)
	}
	if rec.Owner != "" && !validName.MatchString(rec.Owner) {
		return fmt.Errorf("%w: thread %q: owner %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, rec.ID, clip(rec.Owner))
	}
	if rec.RunID != "" && !validName.MatchString(rec.RunID) {
		return fmt.Errorf("%w: thread %q: run id %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, rec.ID, clip(rec.RunID))
	}
	if len(rec.Error) > MaxErrorBytes {
		return fmt.Errorf("%w: thread %q: error text is %d bytes; the limit is %d", ErrInvalidInput, rec.ID, len(rec.Error), MaxErrorBytes)
	}
	if err := checkText(rec.Error); err != nil {
		return fmt.Errorf("%w: thread %q: error text %v", ErrInvalidInput, rec.ID, err)
	}
	if rec.Updated.IsZero() {
		return fmt.Errorf("%w: thread %q: no update time", ErrInvalidInput, rec.ID)
	}
	for _, l := range []struct {
		what  string
		names []string
	}{{"stopped before", rec.Before}, {"stopped after", rec.After}, {"interrupt before", rec.Options.InterruptBefore}, {"interrupt after", rec.Options.InterruptAfter}} {
		if len(l.names) > MaxNodeNames {
			return fmt.Errorf("%w: thread %q: %s lists %d nodes; the limit is %d", ErrInvalidInput, rec.ID, l.what, len(l.names), MaxNodeNames)
		}
		for _, n := range l.names {
			if n == "" || len(n) > MaxNodeNameBytes {
				return fmt.Errorf("%w: thread %q: %s: node name of %d bytes; use 1 to %d", ErrInvalidInput, rec.ID, l.what, len(n), MaxNodeNameBytes)
			}
			if err := checkText(n); err != nil {
				return fmt.Errorf("%w: thread %q: %s: node name %v", ErrInvalidInput, rec.ID, l.what, err)
			}
		}
	}
	if r := rec.Options.RecursionLimit; r < 0 || r > MaxRecursionLimit {
		return fmt.Errorf("%w: thread %q: recursion limit %d: use 1 to %d (0 for the default)", ErrInvalidInput, rec.ID, r, MaxRecursionLimit)
	}
	return nil
}

// CheckThreadFilter reports why f cannot select threads, or nil.
func CheckThreadFilter(f ThreadFilter) error {
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return fmt.Errorf("%w: unknown status %q", ErrInvalidInput, clip(string(f.Status)))
	}
	if f.Graph != "" && !validName.MatchString(f.Graph) {
		return fmt.Errorf("%w: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, clip(f.Graph))
	}
	if f.Limit < 0 {
		return fmt.Errorf("%w: limit %d: use 0 (no limit) or more", ErrInvalidInput, f.Limit)
	}
	if f.Offset < 0 {
		return fmt.Errorf("%w: offset %d: use 0 or more", ErrInvalidInput, f.Offset)
	}
	if len(f.IDs) > MaxFilterIDs {
		return fmt.Errorf("%w: ids: %d given; the limit is %d", ErrInvalidInput, len(f.IDs), MaxFilterIDs)
	}
	for _, id := range f.IDs {
		if err := CheckThreadID(id); err != nil {
			return fmt.Errorf("ids: %w", err)
		}
	}
	if _, err := normalizeMetadata(f.Metadata); err != nil {
		return fmt.Errorf("%w: filter: %v", ErrInvalidInput, err)
	}
	if !slices.Contains(ThreadSorts, f.SortBy) {
		return fmt.Errorf("%w: sort by %q: use one of thread_id, status, created_at, updated_at, state_updated_at", ErrInvalidInput, clip(f.SortBy))
	}
	if f.SortOrder != "" && f.SortOrder != "asc" && f.SortOrder != "desc" {
		return fmt.Errorf("%w: sort order %q: use asc or desc", ErrInvalidInput, clip(f.SortOrder))
	}
	return nil
}

// ThreadSorts are the values ThreadFilter.SortBy accepts; "" is
// "updated_at".
var ThreadSorts = []string{"", "thread_id", "status", "created_at", "updated_at", "state_updated_at"}

// Match reports whether f selects rec: its status, graph, ids and
// metadata (ignoring limit, offset and order). rec's metadata is taken as
// a store reads it back (see ThreadRecord.Metadata). f must have passed
// CheckThreadFilter.
func (f ThreadFilter) Match(rec ThreadRecord) bool { return f.matcher()(rec) }

// matcher is Match with f's metadata decoded once, for a list.
func (f ThreadFilter) matcher() func(ThreadRecord) bool {
	want, err := normalizeMetadata(f.Metadata)
	return func(rec ThreadRecord) bool {
		if err != nil || f.Status != "" && rec.Status != f.Status || f.Graph != "" && rec.Graph != f.Graph {
			return false
		}
		if len(f.IDs) > 0 && !slices.Contains(f.IDs, rec.ID) {
			return false
		}
		return want == nil || checkpoints.ContainsJSON(objectOrEmpty(rec.Metadata), want)
	}
}

// objectOrEmpty keeps a nil object an object for checkpoints.ContainsJSON.
func objectOrEmpty(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// Compare orders two records as f lists them: by f.SortBy in f.SortOrder
// (descending by default), ties by id ascending. A zero StateUpdated
// sorts as the oldest time (Postgres' NULLS FIRST ascending, LAST
// descending).
func (f ThreadFilter) Compare(a, b ThreadRecord) int {
	var c int
	switch f.SortBy {
	case "thread_id":
		c = strings.Compare(a.ID, b.ID)
	case "status":
		c = strings.Compare(string(a.Status), string(b.Status))
	case "created_at":
		c = a.Created.Compare(b.Created)
	case "state_updated_at":
		c = a.StateUpdated.Compare(b.StateUpdated)
	default:
		c = a.Updated.Compare(b.Updated)
	}
	if f.SortOrder != "asc" {
		c = -c
	}
	if c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// normalizeMetadata checks m (see ThreadRecord.Metadata) and returns it
// as the stores read it back: decoded from its JSON, nil when empty. Its
// error names the field and, for a bad value, the key path to it.
func normalizeMetadata(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	// encoding/json would quietly turn invalid UTF-8 into U+FFFD;
	// refuse it instead, as the text fields do.
	if err := checkUTF8(m, "metadata"); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("metadata is not JSON: %v", clipErr(err))
	}
	if len(b) > MaxMetadataBytes {
		return nil, fmt.Errorf("metadata is %d bytes of JSON; the limit is %d", len(b), MaxMetadataBytes)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("metadata is not JSON: %v", clipErr(err))
	}
	if err := checkJSONText(out, "metadata", 0); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// checkUTF8 refuses invalid UTF-8 in the keys and strings of v's plain
// JSON values (other Go values are left to encoding/json).
func checkUTF8(v any, path string) error {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return fmt.Errorf("%q: invalid UTF-8", clip(path))
		}
	case map[string]any:
		for k, e := range v {
			p := path + "." + k
			if !utf8.ValidString(k) {
				return fmt.Errorf("%s: key is invalid UTF-8", clip(strings.ToValidUTF8(p, "\uFFFD")))
			}
			if err := checkUTF8(e, p); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkUTF8(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkJSONText refuses what Postgres' jsonb cannot hold (NUL in a key or
// string) and nesting deeper than MaxMetadataDepth, in decoded JSON.
func checkJSONText(v any, path string, depth int) error {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%q: contains NUL", clip(path))
		}
	case map[string]any:
		if depth >= MaxMetadataDepth {
			return fmt.Errorf("metadata nests deeper than %d levels", MaxMetadataDepth)
		}
		for k, e := range v {
			p := path + "." + k
			if strings.IndexByte(k, 0) >= 0 {
				return fmt.Errorf("%s: key contains NUL", clip(strings.ReplaceAll(p, "\x00", "\\0")))
			}
			if err := checkJSONText(e, p, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if depth >= MaxMetadataDepth {
			return fmt.Errorf("metadata nests deeper than %d levels", MaxMetadataDepth)
		}
		for i, e := range v {
			if err := checkJSONText(e, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// clipErr shortens an encoding/json error, which may quote the value.
func clipErr(err error) string { return clip(err.Error()) }

// CheckThreadID reports why id cannot be a thread id, or nil: ids are
// what a URL path segment and an element id can carry unescaped.
func CheckThreadID(id string) error {
	if !validName.MatchString(id) || id == "." || id == ".." {
		return fmt.Errorf("%w: thread id %q: %s", ErrInvalidInput, clip(id), threadIDRule)
	}
	return nil
}

// threadIDRule says which thread ids are accepted. "." and ".." are
// refused: a thread's pages live at /threads/{id}, and browsers and URL
// parsers resolve those two as path steps ("/threads/.." is "/"), so
// their pages and forms could never be reached.
const threadIDRule = "use letters, digits, '.', '_' and '-' (1-128 characters), other than \".\" or \"..\" alone"

// checkText refuses what Postgres text cannot hold.
func checkText(s string) error {
	if p := pgtext.Problem(s); p != "" {
		return errors.New(p)
	}
	return nil
}

// clip shortens a rejected value for an error message, so a 1 MB id does
// not come back as a 1 MB message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return textcut.Cut(s, max) + "…"
}

// cleanText makes run error text storable: invalid UTF-8 and NULs become
// U+FFFD and the text is cut to MaxErrorBytes on a rune boundary. Run
// errors carry whatever a node returned; refusing to record one would
// lose the fact that the run failed.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	if len(s) <= MaxErrorBytes {
		return s
	}
	const more = "…"
	return textcut.Cut(s, MaxErrorBytes-len(more)) + more
}

// Stamp is the form every ThreadStore keeps times in: UTC, to the
// microsecond (Postgres' precision), so a record reads back the same from
// either registry.
func Stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Normalized is rec as every ThreadStore reads it back: its lists copied,
// an empty list nil (Postgres reads an empty array back like one never
// set), its times stamped (a zero time stays zero), its metadata decoded
// from its JSON (see ThreadRecord.Metadata; left as it is when it cannot
// be stored).
func (rec ThreadRecord) Normalized() ThreadRecord {
	rec = rec.clone()
	rec.Updated = Stamp(rec.Updated)
	for _, t := range []*time.Time{&rec.Created, &rec.StateUpdated} {
		if !t.IsZero() {
			*t = Stamp(*t)
		}
	}
	if m, err := normalizeMetadata(rec.Metadata); err == nil {
		rec.Metadata = m
	}
	for _, l := range []*[]string{&rec.Before, &rec.After, &rec.Options.InterruptBefore, &rec.Options.InterruptAfter} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	return rec
}

// clone copies rec's lists, so a caller's later changes do not reach a
// store's copy (or the other way round).
func (rec ThreadRecord) clone() ThreadRecord {
	rec.Before, rec.After = slices.Clone(rec.Before), slices.Clone(rec.After)
	rec.Options.InterruptBefore = slices.Clone(rec.Options.InterruptBefore)
	rec.Options.InterruptAfter = slices.Clone(rec.Options.InterruptAfter)
	if rec.Metadata != nil {
		rec.Metadata = deepCopy(rec.Metadata).(map[string]any)
	}
	return rec
}

// deepCopy copies the objects and arrays of decoded JSON.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// CheckHeartbeat reports why Heartbeat cannot record owner at at, or nil.
func CheckHeartbeat(owner string, at time.Time) error {
	if !validName.MatchString(owner) {
		return fmt.Errorf("%w: owner %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, clip(owner))
	}
	if at.IsZero() {
		return fmt.Errorf("%w: a heartbeat needs a time", ErrInvalidInput)
	}
	return nil
}

// CheckOrphans reports why Orphans cannot answer for at and within, or nil.
func CheckOrphans(at time.Time, within time.Duration) error {
	if at.IsZero() {
		return fmt.Errorf("%w: orphans need a time to be orphans at", ErrInvalidInput)
	}
	if within <= 0 {
		return fmt.Errorf("%w: owner timeout %v: use a positive duration", ErrInvalidInput, within)
	}
	return nil
}

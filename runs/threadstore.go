package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	// SaveThread creates the thread's record or replaces it. Updated is
	// kept to the microsecond (Postgres' precision), in UTC.
	SaveThread(ctx context.Context, rec ThreadRecord) error
	// GetThread returns a thread's record; ErrUnknownThread when there is
	// none, ErrInvalidInput when id cannot be a thread id.
	GetThread(ctx context.Context, id string) (ThreadRecord, error)
	// ListThreads returns the records f selects, most recently updated
	// first, ties by id (bytewise), at most f.Limit of them (0: all).
	ListThreads(ctx context.Context, f ThreadFilter) ([]ThreadRecord, error)
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
	// whole life.
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
)

// CheckThreadRecord reports why rec cannot be stored, or nil when it can.
// Errors wrap ErrInvalidInput and name the field.
func CheckThreadRecord(rec ThreadRecord) error {
	if err := CheckThreadID(rec.ID); err != nil {
		return err
	}
	if !validName.MatchString(rec.Graph) {
		return fmt.Errorf("%w: thread %q: graph %q: use letters, digits, '.', '_' and '-' (1-128 characters)", ErrInvalidInput, rec.ID, clip(rec.Graph))
	}
	if !slices.Contains(Statuses, rec.Status) {
		return fmt.Errorf("%w: thread %q: unknown status %q", ErrInvalidInput, rec.ID, clip(string(rec.Status)))
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
	return nil
}

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
// set), Updated stamped.
func (rec ThreadRecord) Normalized() ThreadRecord {
	rec = rec.clone()
	rec.Updated = Stamp(rec.Updated)
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
	return rec
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

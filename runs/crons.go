package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
)

// ErrUnknownCron: no cron has the id.
var ErrUnknownCron = errors.New("unknown cron")

// Cron is a scheduled run of the Agent Server API: on every time its
// schedule names, until EndTime, a run of its assistant starts on its
// thread, or on a new thread of its own when it has none (a stateless
// cron).
type Cron struct {
	// ID is a UUID in its canonical lower-case form.
	ID string
	// Assistant is the assistant's id as the cron was created with (an
	// assistant id or a graph id, resolved at each firing).
	Assistant string
	// Thread is the thread the runs start on; "" for a stateless cron.
	Thread string
	// Schedule is a standard 5-field cron expression, read in UTC.
	Schedule string
	// EndTime, when set, is when the cron stops firing.
	EndTime *time.Time
	// Payload is the run-create body each firing starts its run with.
	Payload map[string]any
	// Metadata is free-form, for the cron's owner.
	Metadata map[string]any
	// NextRun is when the cron fires next; nil when it never will again
	// (past its end time).
	NextRun *time.Time
	// OnRunCompleted says what becomes of a stateless firing's thread
	// once its run ended: "delete" (the default) or "keep".
	OnRunCompleted string
	// Enabled: a disabled cron does not fire.
	Enabled bool
	// UserID is who made it ("" with no authentication).
	UserID string
	// Created and Updated are when it was made and last changed.
	Created, Updated time.Time
}

// CronFiring is one due time of one cron: the cron as it was when it
// came due, and the time it fired for.
type CronFiring struct {
	Cron Cron
	At   time.Time
}

// Key is the firing's id, the same in every process: a UUID (version 5)
// of the cron's id and the due time.
func (f CronFiring) Key() string {
	return uuid.NewSHA1(cronSpace, []byte(f.Cron.ID+"@"+f.At.UTC().Format(time.RFC3339Nano))).String()
}

// cronSpace is the UUID namespace of firing keys.
var cronSpace = uuid.MustParse("6c1f7a52-43f5-4f0e-9d8a-5b0c2e7f3a11")

// CronQuery selects crons; empty fields select everything.
type CronQuery struct {
	Assistant, Thread string
	// Enabled, when set, must equal the cron's.
	Enabled *bool
	// Limit caps the page (0: no cap); Offset skips that many first.
	Limit, Offset int
	// SortBy orders the results ("": created_at), ties by id in the same
	// direction; Desc reverses.
	SortBy CronSort
	Desc   bool
}

// CronSort names the field a cron search orders by.
type CronSort string

// The orders of a cron search.
const (
	CronByID        CronSort = "cron_id"
	CronByAssistant CronSort = "assistant_id"
	CronByThread    CronSort = "thread_id"
	CronByCreated   CronSort = "created_at"
	CronByUpdated   CronSort = "updated_at"
	CronByNextRun   CronSort = "next_run_date"
)

// CronSorts lists the accepted orders.
var CronSorts = []CronSort{CronByID, CronByAssistant, CronByThread, CronByCreated, CronByUpdated, CronByNextRun}

// CronPatch is a change to a cron: nil fields are kept. A changed
// schedule, end time or enabling recomputes the next run from now.
type CronPatch struct {
	Schedule       *string
	EndTime        *time.Time
	Payload        map[string]any
	Metadata       map[string]any
	OnRunCompleted *string
	Enabled        *bool
}

// CronStore keeps crons.
//
// Implementations: MemoryCrons in this package, runs/pgthreads for
// Postgres (where deleting a thread or an assistant deletes its crons in
// the same statement; a memory store's owner deletes them with
// DeleteThreadCrons).
type CronStore interface {
	// CreateCron stores c (its NextRun computed by the caller).
	CreateCron(ctx context.Context, c Cron) (Cron, error)
	// GetCron returns a cron, or ErrUnknownCron.
	GetCron(ctx context.Context, id string) (Cron, error)
	// UpdateCron applies p at now and returns the cron as it is then.
	UpdateCron(ctx context.Context, id string, p CronPatch, now time.Time) (Cron, error)
	// DeleteCron deletes a cron, or fails with ErrUnknownCron.
	DeleteCron(ctx context.Context, id string) error
	// DeleteThreadCrons deletes the crons of a thread and says how many.
	DeleteThreadCrons(ctx context.Context, thread string) (int, error)
	// SearchCrons lists the crons q selects, CountCrons counts them
	// (ignoring Limit and Offset).
	SearchCrons(ctx context.Context, q CronQuery) ([]Cron, error)
	CountCrons(ctx context.Context, q CronQuery) (int, error)
	// Due takes the enabled crons due at now: each one's next run moves
	// to the schedule's next time after now (none past its end time), in
	// one step, so each due time is taken once however many callers ask.
	Due(ctx context.Context, now time.Time) ([]CronFiring, error)
}

// cronParser reads standard 5-field cron expressions and the
// descriptors (@hourly, @daily, ...).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CheckSchedule reports why s is not a schedule a cron can have, or nil.
func CheckSchedule(s string) error {
	if _, err := parseSchedule(s); err != nil {
		return err
	}
	return nil
}

func parseSchedule(s string) (cron.Schedule, error) {
	if len(s) > 200 {
		return nil, fmt.Errorf("%w: schedule is %d bytes long; at most 200", ErrInvalidInput, len(s))
	}
	// robfig also reads a time zone (CRON_TZ=..., TZ=...) and @every
	// intervals: a schedule is 5 fields in UTC, as upstream's.
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "CRON_TZ=") || strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "@every") {
		return nil, fmt.Errorf("%w: schedule %q: time zones and @every are not supported (want 5 fields in UTC: minute hour day-of-month month day-of-week, as \"*/5 * * * *\")", ErrInvalidInput, s)
	}
	sch, err := cronParser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: %v (want 5 fields: minute hour day-of-month month day-of-week, as \"*/5 * * * *\")", ErrInvalidInput, s, err)
	}
	if next := sch.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)); next.IsZero() {
		// robfig's Next gives up after five years without a match
		// (Feb 30th): such a schedule would never fire.
		return nil, fmt.Errorf("%w: schedule %q never fires", ErrInvalidInput, s)
	}
	return sch, nil
}

// NextRun is when a cron with schedule s and end time end fires first
// after now (in UTC); nil when never (past end, or a schedule that does
// not parse).
func NextRun(s string, end *time.Time, now time.Time) *time.Time {
	sch, err := parseSchedule(s)
	if err != nil {
		return nil
	}
	next := sch.Next(now.UTC())
	if next.IsZero() || (end != nil && next.After(*end)) {
		return nil
	}
	next = Stamp(next)
	return &next
}

// ApplyCronPatch is p applied to c at now, as every CronStore applies it.
func ApplyCronPatch(c Cron, p CronPatch, now time.Time) Cron {
	resched := false
	if p.Schedule != nil {
		c.Schedule, resched = *p.Schedule, true
	}
	if p.EndTime != nil {
		end := Stamp(*p.EndTime)
		c.EndTime, resched = &end, true
	}
	if p.Payload != nil {
		c.Payload = p.Payload
	}
	if p.Metadata != nil {
		m := make(map[string]any, len(c.Metadata)+len(p.Metadata))
		for k, v := range c.Metadata {
			m[k] = v
		}
		for k, v := range p.Metadata {
			m[k] = v
		}
		c.Metadata = m
	}
	if p.OnRunCompleted != nil {
		c.OnRunCompleted = *p.OnRunCompleted
	}
	if p.Enabled != nil {
		resched = resched || (*p.Enabled && !c.Enabled)
		c.Enabled = *p.Enabled
	}
	if resched {
		c.NextRun = NextRun(c.Schedule, c.EndTime, now)
	}
	c.Updated = Stamp(now)
	return c
}

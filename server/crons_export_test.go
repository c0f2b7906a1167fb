package server

import (
	"context"
	"time"

	"github.com/superstep-dev/superstep/runs"
)

// SetCronClock makes now the API's cron clock, for tests that must not
// wait a real minute for a schedule.
func SetCronClock(a *API, now func() time.Time) { a.clock.Store(&now) }

// SetCronTicker turns the API's own cron ticker on or off, for tests
// that fire due crons themselves (FireDueCrons) and count them.
func SetCronTicker(a *API, on bool) { a.cronTickerOff.Store(!on) }

// FireDueCrons fires the crons due on a's clock, as its ticker does.
func FireDueCrons(ctx context.Context, a *API) (int, error) { return a.fireDueCrons(ctx) }

// FireCron fires one firing, as a (retried) fire job does.
func FireCron(ctx context.Context, a *API, f runs.CronFiring) error { return a.fireCron(ctx, f) }

// WatchedRuns counts the runs of the durable queue the API watches for
// callers waiting on them to start.
func WatchedRuns(a *API) int {
	a.watching.mu.Lock()
	defer a.watching.mu.Unlock()
	return len(a.watching.runs)
}

// SetQueueLimits sets the bounds of the durable queue's pending runs
// until the test ends (restore puts them back).
func SetQueueLimits(perThread, total int) (restore func()) {
	old := queueLimits
	queueLimits = runs.QueueLimits{PerThread: perThread, Total: total}
	return func() { queueLimits = old }
}

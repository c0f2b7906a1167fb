package cachetest

import (
	"time"

	"github.com/superstep-dev/superstep/internal/testclock"
)

// Start is the time a FakeClock made by the suite begins at. It is a whole
// second, so every time the suite reaches lies on a microsecond (the
// resolution of a Postgres timestamptz) and both implementations see the
// same instants.
var Start = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// FakeClock is a clock that moves only when told to. Pass its Now method
// as the cache's clock hook; the suite then decides expiry without
// sleeping.
type FakeClock = testclock.Clock

// NewFakeClock returns a clock stopped at start.
func NewFakeClock(start time.Time) *FakeClock { return testclock.New(start) }

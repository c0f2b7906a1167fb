package cachetest

import (
	"sync"
	"time"
)

// Start is the time a FakeClock made by the suite begins at. It is a whole
// second, so every time the suite reaches lies on a microsecond (the
// resolution of a Postgres timestamptz) and both implementations see the
// same instants.
var Start = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

// FakeClock is a clock that moves only when told to. Pass its Now method
// as the cache's clock hook; the suite then decides expiry without
// sleeping. It is safe for concurrent use.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock stopped at start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start}
}

// Now returns the clock's current time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

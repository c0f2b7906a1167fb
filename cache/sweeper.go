package cache

import (
	"context"
	"sync"
	"time"
)

// Sweeping calls a Sweeper's Sweep in the background, every interval,
// until Close. Both caches here run one when their SweepInterval is
// positive.
type Sweeping struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartSweeping starts calling c.Sweep every interval and reports each
// result to onSweep (when not nil), except for a sweep cut short by Close.
// A zero or negative interval starts nothing, and Close returns at once.
func StartSweeping(interval time.Duration, c Sweeper, onSweep func(int, error)) *Sweeping {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sweeping{cancel: cancel, done: make(chan struct{})}
	if interval <= 0 {
		close(s.done)
		return s
	}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				n, err := c.Sweep(ctx)
				if onSweep != nil && ctx.Err() == nil {
					onSweep(n, err)
				}
			}
		}
	}()
	return s
}

// Close stops the sweeper, cancelling a sweep in progress, and waits for
// it to return. It is safe to call more than once.
func (s *Sweeping) Close() {
	s.once.Do(s.cancel)
	<-s.done
}

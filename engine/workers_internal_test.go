package engine

import (
	"sync"
	"testing"
	"time"
)

type blockingJob struct {
	started *sync.WaitGroup
	release chan struct{}
}

func (j blockingJob) run() {
	j.started.Done()
	<-j.release
}

// After a burst of blocking work the workers it needed wait a while for
// more, then exit: no goroutines are left parked for good.
func TestIdleWorkersExit(t *testing.T) {
	old := workerIdle.Load()
	workerIdle.Store(int64(200 * time.Millisecond))
	defer workerIdle.Store(old)
	const burst = 50
	var started sync.WaitGroup
	started.Add(burst)
	release := make(chan struct{})
	for range burst {
		spawn(blockingJob{started: &started, release: release})
	}
	started.Wait() // every job has a goroutine of its own
	// Workers idle from earlier tests took some of the jobs; the ones
	// still idle wait on their own timers and count as before.
	before := idleWorkers()
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for peak := 0; ; {
		n := idleWorkers()
		peak = max(peak, n)
		if peak >= before+burst/2 && n <= before {
			return // they went idle, then left
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle workers: %d before the burst, at most %d after it, still %d", before, peak, n)
		}
		time.Sleep(time.Millisecond)
	}
}

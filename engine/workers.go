package engine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A superstep's tasks run from a shared queue (stepRun). The loop's own
// goroutine takes tasks too, and whoever takes a task while others are
// still queued first wakes one more helper, unless one is already on its
// way. So a step of tiny CPU-bound nodes costs a wake-up or two, not a
// goroutine hand-off per task, while a step of blocking nodes (I/O, LLM
// calls) still has every task running at once: each helper that arrives
// takes a task and wakes the next before it blocks. Concurrency is never
// capped.
type stepRun struct {
	ctx    context.Context
	hold   ctxHolder // holds ctx for the tasks' executions
	cancel context.CancelFunc
	tasks  []*task
	next   atomic.Int32 // index of the next task to take
	waking atomic.Bool  // a helper has been woken and has not arrived yet
	done   sync.WaitGroup

	mu       sync.Mutex
	firstErr error
}

// runStep runs tasks in parallel and returns the first real failure (or
// the context's error).
func runStep(ctx context.Context, tasks []*task) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &stepRun{ctx: cctx, hold: ctxHolder{ctx: cctx}, cancel: cancel, tasks: tasks}
	s.done.Add(len(tasks))
	s.work()
	s.done.Wait()
	if s.firstErr != nil {
		return s.firstErr
	}
	return ctx.Err()
}

// take returns the next queued task (nil when none is left), waking a
// helper first when more tasks wait behind it.
func (s *stepRun) take() *task {
	i := int(s.next.Add(1)) - 1
	if i >= len(s.tasks) {
		return nil
	}
	if i+1 < len(s.tasks) && s.waking.CompareAndSwap(false, true) {
		spawn(s)
	}
	return s.tasks[i]
}

// work takes and runs tasks until the queue is empty.
func (s *stepRun) work() {
	for t := s.take(); t != nil; t = s.take() {
		s.exec(t)
	}
}

// run is a helper's job: it has arrived, so the next take may wake
// another.
func (s *stepRun) run() {
	s.waking.Store(false)
	s.work()
}

// exec runs one task, records the first real failure and cancels the
// siblings. A task taken after a sibling failed still runs (with the
// cancelled context), as it would have had it started a moment earlier:
// a node that finishes anyway keeps its writes as pending writes.
func (s *stepRun) exec(t *task) {
	defer s.done.Done()
	err := t.execute(s.ctx, &s.hold)
	if err == nil || errors.Is(err, errInterruptSignal) {
		return // an interrupt is not a failure: siblings go on
	}
	s.mu.Lock()
	if s.firstErr == nil && (s.ctx.Err() == nil || !errors.Is(err, context.Canceled)) {
		s.firstErr = err
	}
	s.mu.Unlock()
	s.cancel()
}

// job is work for a worker goroutine.
type job interface{ run() }

// Workers are goroutines reused across steps and runs: a fresh goroutine
// starts with a small stack that grows (and is copied) as a node's call
// chain deepens. Idle workers wait on their own channel in a LIFO stack,
// so the most recently used (warm) one is woken first; one left idle for
// workerIdle exits, so a burst of blocking nodes leaves no goroutines
// behind for long.
const maxIdleWorkers = 1024

// workerIdle is how long an idle worker waits for work (a variable for
// tests).
var workerIdle atomic.Int64

func init() { workerIdle.Store(int64(10 * time.Second)) }

var idle struct {
	mu      sync.Mutex
	workers []chan job
}

// spawn runs j on an idle worker, or on a new goroutine when none is idle.
func spawn(j job) {
	idle.mu.Lock()
	n := len(idle.workers)
	if n == 0 {
		idle.mu.Unlock()
		go worker(j)
		return
	}
	w := idle.workers[n-1]
	idle.workers = idle.workers[:n-1]
	idle.mu.Unlock()
	w <- j
}

func worker(j job) {
	jobs := make(chan job, 1)
	var timer *time.Timer
	for {
		j.run()
		idle.mu.Lock()
		if len(idle.workers) >= maxIdleWorkers {
			idle.mu.Unlock()
			return
		}
		idle.workers = append(idle.workers, jobs)
		idle.mu.Unlock()
		wait := time.Duration(workerIdle.Load())
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case j = <-jobs:
			timer.Stop()
		case <-timer.C:
			if leaveIdle(jobs) {
				return
			}
			j = <-jobs // spawn took this worker off the stack: its job is coming
		}
	}
}

// leaveIdle takes an idle worker off the stack, unless spawn already did.
func leaveIdle(jobs chan job) bool {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	i := slices.Index(idle.workers, jobs)
	if i < 0 {
		return false
	}
	idle.workers = slices.Delete(idle.workers, i, i+1)
	return true
}

// idleWorkers reports how many workers wait for work.
func idleWorkers() int {
	idle.mu.Lock()
	defer idle.mu.Unlock()
	return len(idle.workers)
}

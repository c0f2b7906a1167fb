package engine

import "time"

// Tasks of a superstep run on goroutines reused across steps and runs: a
// fresh goroutine starts with a small stack that grows (and is copied) as a
// node's call chain deepens, which costs more than the node itself in
// fan-outs of small nodes. Concurrency is never limited — a task that finds
// no idle worker gets a new goroutine — because nodes are often I/O-bound;
// idle workers exit after workerIdle.
var workerJobs = make(chan job)

// job is work for a worker; a *task is one.
type job interface{ run() }

const workerIdle = 10 * time.Second

func spawn(j job) {
	select {
	case workerJobs <- j:
	default:
		go worker(j)
	}
}

func worker(j job) {
	j.run()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case j := <-workerJobs:
			j.run()
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		}
	}
}

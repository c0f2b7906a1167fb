package engine

import "time"

// Tasks of a superstep run on goroutines reused across steps and runs: a
// fresh goroutine starts with a small stack that grows (and is copied) as a
// node's call chain deepens, which costs more than the node itself in
// fan-outs of small nodes. Concurrency is never limited — a task that finds
// no idle worker gets a new goroutine — because nodes are often I/O-bound;
// idle workers exit after workerIdle.
var workerJobs = make(chan func())

const workerIdle = 10 * time.Second

func spawn(job func()) {
	select {
	case workerJobs <- job:
	default:
		go worker(job)
	}
}

func worker(job func()) {
	job()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		select {
		case job := <-workerJobs:
			job()
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(workerIdle)
		case <-idle.C:
			return
		}
	}
}

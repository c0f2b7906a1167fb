package runs

import (
	"context"
	"slices"
)

// runLogOf reads the thread's latest runs, at most limit (0: all), with
// the records this process holds that the run log may not have yet: the
// active run's and those of runs whose end is still being written (their
// recorders), and records whose write failed and waits to be retried. A
// run is so reported ended as soon as its thread is idle, not once its
// record is written. The held records are taken before the log is read,
// so a record written meanwhile is in one or the other; an ended record
// is never replaced by one that has not ended (RunLog.SaveRun's rule).
func (m *Manager) runLogOf(ctx context.Context, threadID string, limit int) ([]RunRecord, error) {
	var held []RunRecord
	m.mu.Lock()
	if t, ok := m.threads[threadID]; ok {
		for _, r := range t.ending {
			held = append(held, r.snapshot())
		}
		if t.run != nil {
			held = append(held, t.run.snapshot())
		}
	}
	for key, u := range m.unsavedRuns {
		if key[0] == threadID {
			held = append(held, u.RunRecord)
		}
	}
	m.mu.Unlock()
	recs, err := m.runLog.ListRuns(ctx, threadID, limit)
	if err != nil {
		return nil, err
	}
	added := false
	for _, a := range held {
		i := slices.IndexFunc(recs, func(r RunRecord) bool { return r.RunID == a.RunID })
		switch {
		case i < 0:
			recs, added = append(recs, a), true
		case !recs[i].Ended.IsZero() && a.Ended.IsZero():
			// The log has the end already.
		default:
			recs[i] = a
		}
	}
	if added {
		SortRuns(recs)
		if limit > 0 && len(recs) > limit {
			recs = recs[len(recs)-limit:]
		}
	}
	return recs, nil
}

// withRunLog folds a thread's run log into the catch-up Catchup rebuilt
// from the head's lineage, so the events are those a tab that watched
// the runs received:
//
//   - each run_started carries its run's kind and origin, and is
//     followed by the interrupt_answered events of its answers and the
//     run_takeover events of its takeovers;
//   - a run that saved no checkpoint of its own (a resume that failed or
//     stopped again at once) gets its run_started after the run it
//     started from;
//   - a task's outcome is its run's: cached, cancelled, duration,
//     attempts; a task a later run carried on (an interrupted task a
//     resume ran again) is planned and ended again in that run, after its
//     answers, as it was live.
//
// Runs whose record is missing (an older Studio, a lost memory log) keep
// what the checkpoints say.
func withRunLog(evs []Event, recs []RunRecord) []Event {
	if len(recs) == 0 || len(evs) == 0 {
		return evs
	}
	type segment struct {
		start Event
		body  []Event
		rec   *RunRecord
	}
	var segs []*segment
	ckptSeg := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == KindRunStarted || len(segs) == 0 {
			s := &segment{start: ev}
			if ev.Kind != KindRunStarted {
				s.start = Event{Kind: KindRunStarted, Catchup: true, Thread: ev.Thread, Time: ev.Time}
				s.body = append(s.body, ev)
			}
			segs = append(segs, s)
			continue
		}
		last := segs[len(segs)-1]
		last.body = append(last.body, ev)
		if ev.Kind == KindCheckpoint {
			ckptSeg[ev.Checkpoint] = len(segs) - 1
		}
	}
	byRun := make(map[string]*RunRecord, len(recs))
	for i := range recs {
		byRun[recs[i].RunID] = &recs[i]
	}
	present := map[string]bool{}
	for _, s := range segs {
		present[s.start.RunID] = true
		s.rec = byRun[s.start.RunID]
	}
	// Runs of the lineage without checkpoints of their own, after the
	// run they started from (recs are oldest first).
	extra := map[int][]*segment{}
	for i := range recs {
		r := &recs[i]
		at, ok := ckptSeg[r.From]
		if present[r.RunID] || !ok {
			continue
		}
		present[r.RunID] = true
		ev := Event{Kind: KindRunStarted, Catchup: true, RunID: r.RunID, Time: r.Started}
		if len(segs[at].body) > 0 {
			ev.Thread = segs[at].body[0].Thread
		}
		extra[at] = append(extra[at], &segment{start: ev, rec: r})
	}
	if len(extra) > 0 {
		var all []*segment
		for i, s := range segs {
			all = append(all, s)
			all = append(all, extra[i]...)
		}
		segs = all
	}
	outcomes := make([]map[string]TaskOutcome, len(segs))
	for i, s := range segs {
		if s.rec == nil {
			continue
		}
		outcomes[i] = make(map[string]TaskOutcome, len(s.rec.Tasks))
		for _, t := range s.rec.Tasks {
			outcomes[i][taskKey(t.Step, t.TaskID)] = t
		}
	}
	// later reports whether a run after segment i recorded the task.
	later := func(i int, key string) bool {
		for j := i + 1; j < len(segs); j++ {
			if _, ok := outcomes[j][key]; ok {
				return true
			}
		}
		return false
	}
	queued := make([][]Event, len(segs))
	out := make([]Event, 0, len(evs)+8)
	for i, s := range segs {
		start := s.start
		if s.rec != nil {
			start.RunKind, start.Origin, start.Time = s.rec.Kind, originText(s.rec.Origin), s.rec.Started
			as := answerEvents(start.Thread, start.RunID, s.rec.Answers)
			// A page shows that another process continued the run, not
			// where in the run it did: after its answers is as good a
			// place as any.
			for _, tk := range s.rec.Takeovers {
				as = append(as, Event{Kind: KindRunTakeover, Thread: start.Thread, RunID: start.RunID, Attempt: tk.Attempt, Time: tk.At})
			}
			for k := range as {
				as[k].Catchup = true
			}
			queued[i] = append(as, queued[i]...)
		}
		out = append(out, start)
		out = append(out, queued[i]...)
		// The outcome events the checkpoints gave each task here, to copy
		// what they know (interrupt values, writes) into the log's.
		given := map[string]Event{}
		for _, ev := range s.body {
			if ev.Path == "" && ev.TaskID != "" && ev.Kind != KindTaskPlanned {
				given[taskKey(ev.Step, ev.TaskID)] = ev
			}
		}
		for _, ev := range s.body {
			if ev.Path != "" || ev.TaskID == "" || !isTaskKind(ev.Kind) {
				out = append(out, ev)
				continue
			}
			key := taskKey(ev.Step, ev.TaskID)
			mine, isMine := outcomes[i][key]
			carried := later(i, key)
			if ev.Kind != KindTaskPlanned {
				if !isMine && !carried {
					out = append(out, ev) // no log says otherwise
				}
				continue
			}
			out = append(out, ev)
			if isMine {
				out = append(out, outcomeEvent(ev, mine, given[key]))
			}
			for j := i + 1; j < len(segs); j++ {
				if o, ok := outcomes[j][key]; ok {
					p := ev
					p.Edges = nil
					queued[j] = append(queued[j], p, outcomeEvent(ev, o, given[key]))
				}
			}
		}
	}
	return out
}

// outcomeEvent is the event of a task's recorded outcome, planned as
// planned; given is what the checkpoints said of it (may be zero).
func outcomeEvent(planned Event, o TaskOutcome, given Event) Event {
	ev := planned
	ev.Edges, ev.Triggers = nil, nil
	ev.Attempt, ev.Error = o.Attempts, o.Error
	switch o.Outcome {
	case OutcomeDone, OutcomeCached:
		ev.Kind, ev.DurationMS, ev.Cached = KindTaskFinished, o.DurationMS, o.Outcome == OutcomeCached
		if given.Kind == KindTaskFinished {
			ev.Writes = given.Writes
		}
	case OutcomeFailed:
		ev.Kind = KindTaskFailed
		if ev.Error == "" {
			ev.Error = given.Error
		}
	case OutcomeInterrupted:
		ev.Kind, ev.Interrupts = KindTaskInterrupted, given.Interrupts
	default:
		ev.Kind = KindTaskCancelled
	}
	return ev
}

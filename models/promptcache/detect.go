package promptcache

import "time"

// judge is the second phase of break detection (R11): after the call, a
// drop in cache reads of more than BreakDropRatio against what the
// previous call left readable (and at least MinDropTokens) is a break,
// explained by the pending changes, or, when nothing changed, by the
// likeliest cause.
//
// What the previous call left readable is what it read plus what it
// wrote (capped at this call's prompt): measured against its reads
// alone, a miss right after a call that only wrote — every thread's
// second call, and the call after any break — would never be seen, and
// a prefix that changes on every call would never be reported.
func (c *Cache) judge(cl *call, r *Record) {
	prev := cl.prev
	if prev == nil {
		return
	}
	if cl.sharedBaseline {
		c.judgeShared(cl, r)
		return
	}
	baseline := min(prev.Usage.CacheRead+prev.Usage.CacheWrite5m+prev.Usage.CacheWrite1h, r.Usage.Prompt())
	drop := baseline - r.Usage.CacheRead
	if drop <= 0 || baseline <= 0 {
		return
	}
	r.Break.ReadDropPct = round(100*float64(drop)/float64(baseline), 2)
	if float64(drop) <= BreakDropRatio*float64(baseline) || drop < c.cfg.MinDropTokens {
		return
	}
	c.explain(cl, r)
}

// explain records a break: with the dimensions that changed since the
// baseline, or, when none did, the likeliest cause.
func (c *Cache) explain(cl *call, r *Record) {
	r.Break.Detected = true
	if len(cl.pending) > 0 {
		r.Break.ChangedDimensions = cl.pending
		r.Break.ChangedTools = cl.changedTool
		r.Break.ChangedSystemBlocks = cl.changedSys
		return
	}
	s := c.suspect(cl, r)
	r.Break.Suspected = &s
}

// suspect names the likeliest cause of a break no dimension explains.
func (c *Cache) suspect(cl *call, r *Record) Suspect {
	prev := cl.prev
	ttl := c.cfg.OpenAIIdle
	if cl.anthropic {
		ttl = time.Hour
		for _, m := range prev.Markers {
			ttl = min(ttl, m.TTL.Duration())
		}
		if len(prev.Markers) == 0 {
			ttl = TTL5m.Duration()
		}
	}
	if cl.started.Sub(prev.StartedAt) > ttl {
		return SuspectTTLExpired
	}
	if cl.anthropic && cl.sinceWrite > Lookback && !reachable(cl.lastWritten, cl.markers) {
		return SuspectLookbackExceeded
	}
	if r.Usage.Prompt() < c.minTokens(cl.model) {
		return SuspectBelowMinimum
	}
	if cl.concurrent {
		return SuspectConcurrentSibling
	}
	return SuspectUnknown
}

// reachable reports whether some marker of a call lies within the
// lookback of the previous call's last written position, counted in
// content blocks as the provider counts them.
func reachable(lastWritten int, markers []Marker) bool {
	if lastWritten < 0 {
		return true
	}
	for _, m := range markers {
		if m.Block >= lastWritten && m.Block-lastWritten <= Lookback {
			return true
		}
	}
	return false
}

// judgeShared judges a subgraph call compared with its parent's call
// (ShareParentPrefix): it shares the parent's tools and system, not its
// messages, so the parent's reads are no measure; the break is reading
// nothing when the parent's call had cached a prefix worth reporting.
func (c *Cache) judgeShared(cl *call, r *Record) {
	prev := cl.prev
	cached := prev.Usage.CacheRead + prev.Usage.CacheWrite5m + prev.Usage.CacheWrite1h
	if r.Usage.CacheRead > 0 || cached < c.cfg.MinDropTokens {
		return
	}
	r.Break.ReadDropPct = 100
	c.explain(cl, r)
}

package promptcache

import (
	"context"
	"math"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/uuid"
	"github.com/openai/openai-go/v3"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

// call is one model call between its hooks.
type call struct {
	id         string
	site       callSite
	ts         *threadState
	provider   string
	model      string
	anthropic  bool
	started    time.Time
	generation int
	staticTTL  TTL

	hashes       Hashes
	markers      []Marker
	blockCount   int
	promptBlocks int
	sinceWrite   int
	// lastWritten is the content-block index of the previous call's last
	// marker in this request (-1: none).
	lastWritten int
	pinned      []string

	prev *Record
	// baselineUnknown says why the previous call could not be found
	// ("" when it was, or when there is none).
	baselineUnknown string
	lineage         string
	pending         []Dimension
	changedTool     []string
	changedSys      []int

	fan        *fanGroup
	leader     bool
	firstByte  bool
	concurrent bool

	// shared are the parent's parameters the call was sent with
	// (ShareParentPrefix); sharedBaseline: its baseline is the parent's
	// call. safe are the call's own, committed when it succeeds.
	shared         *cacheSafe
	sharedBaseline bool
	safe           *cacheSafe
}

func (c *Cache) beforeCall(ctx context.Context, req *models.Request) error {
	var isAnthropic bool
	switch req.Params.(type) {
	case *anthropic.MessageNewParams:
		isAnthropic = true
	case *openai.ChatCompletionNewParams:
	default:
		return nil
	}
	site := siteOf(ctx)
	ts, err := c.thread(ctx, site.thread)
	if err != nil {
		return err
	}
	cl := &call{site: site, ts: ts, provider: req.Provider, model: req.Model, anthropic: isAnthropic}
	if id, err := uuid.NewV7(); err == nil {
		cl.id = id.String()
	} else {
		cl.id = uuid.NewString()
	}
	switch p := req.Params.(type) {
	case *anthropic.MessageNewParams:
		err = c.prepareAnthropic(ctx, cl, p, req)
	case *openai.ChatCompletionNewParams:
		err = c.prepareOpenAI(ctx, cl, p)
	}
	if err != nil {
		return err
	}
	if site.fan != nil {
		if err := c.fanWait(ctx, cl); err != nil {
			return err
		}
	}
	cl.started = c.now()
	ts.mu.Lock()
	for other := range ts.running {
		if !other.firstByte && other.hashes.Tools == cl.hashes.Tools && other.hashes.System == cl.hashes.System {
			cl.concurrent = true
		}
	}
	ts.running[cl] = struct{}{}
	ts.mu.Unlock()
	c.mu.Lock()
	c.calls[req] = cl
	c.mu.Unlock()
	return nil
}

func (c *Cache) firstByte(ctx context.Context, req *models.Request) {
	c.mu.Lock()
	cl := c.calls[req]
	c.mu.Unlock()
	if cl == nil {
		return
	}
	cl.ts.mu.Lock()
	cl.firstByte = true
	cl.ts.mu.Unlock()
	if cl.leader {
		cl.fan.release()
	}
}

func (c *Cache) afterCall(ctx context.Context, req *models.Request, resp *models.Response) {
	c.mu.Lock()
	cl := c.calls[req]
	delete(c.calls, req)
	c.mu.Unlock()
	if cl == nil {
		return
	}
	if cl.leader {
		c.fanDone(cl.fan)
	}
	r := c.record(cl, req, resp)
	ts := cl.ts
	ts.mu.Lock()
	delete(ts.running, cl)
	if r.Error == "" {
		ts.add(r)
		ts.commitSafe(cl, r)
	}
	ts.mu.Unlock()
	c.reportError(c.saveRecord(ctx, r))
	engine.Emit(ctx, *r)
}

// record builds a call's Record and judges it.
func (c *Cache) record(cl *call, req *models.Request, resp *models.Response) *Record {
	t := cl.site.task
	r := &Record{
		CallID: cl.id, ThreadID: cl.ts.id, CheckpointID: t.CheckpointID, CheckpointNS: t.CheckpointNS,
		Step: t.Step, Node: t.Node, TaskID: t.TaskID, Lineage: cl.lineage, LineageKey: cl.site.lineageKey,
		Generation: cl.generation, Provider: cl.provider, Model: cl.model, RequestID: resp.RequestID,
		Attempt: t.Attempt, StartedAt: cl.started.UTC(), TTFTMs: resp.FirstToken.Milliseconds(),
		DurationMs: resp.Duration.Milliseconds(), Hashes: cl.hashes, Markers: cl.markers,
		BlockCount: cl.blockCount, BlocksSinceLastWrite: cl.sinceWrite, PinnedTools: cl.pinned,
		Pending: cl.pending, Break: Break{ChangedDimensions: []Dimension{}},
	}
	if r.Markers == nil {
		r.Markers = []Marker{}
	}
	if cl.prev != nil {
		r.PrevCallID = cl.prev.CallID
	}
	if cl.baselineUnknown != "" {
		s := SuspectBaselineUnknown
		r.Break.Suspected, r.Break.Reason = &s, cl.baselineUnknown
	}
	if resp.Err != nil {
		r.Error = resp.Err.Error()
		return r
	}
	if sr, ok := resp.Message.ResponseMetadata["stop_reason"].(string); ok {
		r.StopReason = sr
	}
	r.Usage = c.usage(cl, resp.Usage)
	if p := r.Usage.Prompt(); p > 0 {
		r.HitRatio = round(float64(r.Usage.CacheRead)/float64(p), 4)
	}
	if price, ok := c.price(cl.model); ok {
		r.CostUSD, r.CostUSDUncached = price.cost(r.Usage)
	} else {
		// No price: the cost is unknown, which is not free.
		r.Unpriced = true
	}
	c.judge(cl, r)
	return r
}

// usage reads a reply's usage in the cache's terms. Anthropic's writes
// not split by TTL are counted as 5m writes unless every marker was 1h.
func (c *Cache) usage(cl *call, u *models.UsageMetadata) Usage {
	if u == nil {
		return Usage{}
	}
	var out Usage
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	if d := u.InputTokenDetails; d != nil {
		out.CacheRead = deref(d.CacheRead)
		creation := deref(d.CacheCreation)
		out.CacheWrite5m, out.CacheWrite1h = deref(d.Ephemeral5m), deref(d.Ephemeral1h)
		if creation > 0 {
			all1h := len(cl.markers) > 0
			for _, m := range cl.markers {
				all1h = all1h && m.TTL == TTL1h
			}
			if all1h {
				out.CacheWrite1h += creation
			} else {
				out.CacheWrite5m += creation
			}
		}
	}
	out.Input = max(u.InputTokens-out.CacheRead-out.CacheWrite5m-out.CacheWrite1h, 0)
	out.Output = u.OutputTokens
	if d := u.OutputTokenDetails; d != nil && d.Reasoning != nil {
		v := *d.Reasoning
		out.Reasoning = &v
	}
	return out
}

func round(f float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(f*p) / p
}

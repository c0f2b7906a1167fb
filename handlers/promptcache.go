package handlers

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/web"
)

// CallRecords reads a thread's model-call records, oldest first, as the
// prompt-cache layer stored them (*promptcache.Cache implements it): the
// thread page's prompt-cache panel shows them, after a restart too when
// the layer's store is Postgres.
type CallRecords interface {
	Records(ctx context.Context, thread string) ([]promptcache.Record, error)
}

var _ CallRecords = (*promptcache.Cache)(nil)

// Bounds of the prompt-cache panel: the latest PromptCacheMaxCalls calls
// are listed (the totals count them all); a failed call's error is cut
// to PromptCacheErrorBytes.
const (
	PromptCacheMaxCalls   = 500
	PromptCacheErrorBytes = 512
	// prefixBarWidth is the width of a call's prefix bar, in pixels.
	prefixBarWidth = 240
)

// PromptCacheView is the prompt-cache panel of a thread's records: one
// row per call and the thread's totals. It is the one function behind
// the thread page's panel, its live refresh (PromptCacheFragment, fetched
// when a prompt_cache event arrives) and a reload, so they cannot
// disagree.
func PromptCacheView(recs []promptcache.Record) web.PromptCacheView {
	var v web.PromptCacheView
	var cost, uncached float64
	t := &v.Totals
	byID := make(map[string]*promptcache.Record, len(recs))
	for i := range recs {
		byID[recs[i].CallID] = &recs[i]
	}
	first := max(0, len(recs)-PromptCacheMaxCalls)
	for i, r := range recs {
		u := r.Usage
		t.Calls++
		t.Input += u.Input
		t.Read += u.CacheRead
		t.Write += u.CacheWrite5m + u.CacheWrite1h
		t.Output += u.Output
		t.Prompt += u.Prompt()
		if r.Unpriced {
			t.Unpriced++
		} else {
			cost += r.CostUSD
			uncached += r.CostUSDUncached
		}
		if r.Break.Detected {
			t.Breaks++
		}
		if i >= first {
			v.Calls = append(v.Calls, promptCall(r, byID))
		}
	}
	t.Hit = pct(t.Read, t.Prompt)
	t.Cost, t.Uncached, t.Saving = usd(cost), usd(uncached), usd(uncached-cost)
	t.SavingPct = "0%"
	if uncached > 0 {
		t.SavingPct = strconv.FormatFloat(100*(uncached-cost)/uncached, 'f', 1, 64) + "%"
	}
	if t.Unpriced > 0 && t.Unpriced == t.Calls {
		// Nothing priced: no amount to show, not $0.
		t.Cost, t.Uncached, t.Saving, t.SavingPct = unpriced, unpriced, unpriced, "cost unknown"
	}
	return v
}

// promptCall is one call's row.
func promptCall(r promptcache.Record, byID map[string]*promptcache.Record) web.PromptCall {
	u := r.Usage
	c := web.PromptCall{
		ID: r.CallID, Short: shortID(r.CallID), Node: callNode(r), Step: r.Step, Provider: r.Provider, Model: r.Model, Lineage: r.Lineage,
		Input: u.Input, Read: u.CacheRead, Write: u.CacheWrite5m + u.CacheWrite1h, Output: u.Output, Prompt: u.Prompt(),
		Hit: pct(u.CacheRead, u.Prompt()), Cost: usd(r.CostUSD), Saving: usd(r.CostUSDUncached - r.CostUSD),
		Bar: prefixBar(r),
	}
	if r.Unpriced {
		c.Cost, c.Saving = unpriced, unpriced
	}
	if r.Error != "" {
		c.Error = textcut.Cut(r.Error, PromptCacheErrorBytes)
	}
	if b := r.Break; b.Detected {
		pb := &web.PromptBreak{DropPct: strconv.FormatFloat(b.ReadDropPct, 'f', 1, 64) + "%"}
		for _, d := range b.ChangedDimensions {
			pb.Changed = append(pb.Changed, string(d))
		}
		if b.Suspected != nil {
			pb.Suspected = string(*b.Suspected)
		}
		pb.Text = breakText(b, pb)
		c.Break = pb
	}
	if kind, ok := strings.CutPrefix(r.Lineage, "fork:"); ok {
		f := &web.PromptFork{Kind: kind, Read: u.CacheRead, Prompt: u.Prompt(), Pct: pct(u.CacheRead, u.Prompt())}
		parent := "its parent"
		if p := byID[r.PrevCallID]; p != nil {
			f.Parent = p.CallID
			parent = "its parent's (call at " + callNode(*p) + ", step " + strconv.Itoa(p.Step) + ")"
		}
		f.Text = "fork (" + kind + "): read " + strconv.Itoa(f.Read) + " of " + strconv.Itoa(f.Prompt) + " prompt tokens (" + f.Pct + ") from " + parent + " cache entries"
		c.Fork = f
	}
	return c
}

// unpriced stands for the cost of a call whose model has no price (the
// layer's Config.Prices): unknown, which $0 would misstate as free.
const unpriced = "unpriced"

// suspectText says what each suspected cause means.
var suspectText = map[string]string{
	string(promptcache.SuspectTTLExpired):        "the cache entry's TTL expired",
	string(promptcache.SuspectLookbackExceeded):  "more than 20 new blocks since the last marker (lookback exceeded)",
	string(promptcache.SuspectBelowMinimum):      "the prompt is below the model's minimum cacheable length",
	string(promptcache.SuspectConcurrentSibling): "a concurrent sibling call was still writing the same prefix",
	string(promptcache.SuspectUnknown):           "no dimension changed and no known cause applies",
}

// breakText is a break in one line: the drop, and what changed or the
// suspected cause.
func breakText(b promptcache.Break, pb *web.PromptBreak) string {
	s := "cache break: reads dropped " + pb.DropPct + "; "
	if len(pb.Changed) > 0 {
		parts := make([]string, 0, len(pb.Changed))
		for _, d := range pb.Changed {
			p := d
			switch {
			case d == string(promptcache.DimTools) && len(b.ChangedTools) > 0:
				p += " (" + strings.Join(b.ChangedTools, ", ") + ")"
			case d == string(promptcache.DimSystem) && len(b.ChangedSystemBlocks) > 0:
				blocks := make([]string, len(b.ChangedSystemBlocks))
				for i, n := range b.ChangedSystemBlocks {
					blocks[i] = strconv.Itoa(n)
				}
				p += " (block " + strings.Join(blocks, ", ") + ")"
			}
			parts = append(parts, p)
		}
		return s + "changed: " + strings.Join(parts, ", ")
	}
	if pb.Suspected == "" {
		return s + "cause unknown"
	}
	why := suspectText[pb.Suspected]
	if why == "" {
		return s + "suspected: " + pb.Suspected
	}
	return s + "suspected: " + pb.Suspected + " — " + why
}

// callNode is a call's node as the drawing names it (react:agent for a
// subgraph's agent node).
func callNode(r promptcache.Record) string {
	if r.CheckpointNS == "" {
		return r.Node
	}
	path, _, _ := strings.Cut(r.LineageKey, "|"+r.Node)
	path = strings.ReplaceAll(strings.TrimPrefix(path, "|"), "|", ":")
	if path == "" {
		return r.Node
	}
	return path + ":" + r.Node
}

var markerAt = regexp.MustCompile(`^(tools|system)\[(\d+)\]`)

// prefixBar draws a call's rendered prefix: tools, system blocks and
// message blocks as segments in proportion to their block counts (each
// at least a tenth of the bar), and each marker at the end of the block
// it marks.
func prefixBar(r promptcache.Record) web.PrefixBar {
	nTools, nSys := len(r.Hashes.ToolOrder), len(r.Hashes.SystemBlocks)
	nMsg := max(r.BlockCount-nTools-nSys, 0)
	for _, m := range r.Markers {
		nMsg = max(nMsg, m.MessageBlock+1)
	}
	counts := []struct {
		kind string
		n    int
	}{{"tools", nTools}, {"system", nSys}, {"messages", nMsg}}
	total := nTools + nSys + nMsg
	b := web.PrefixBar{Width: prefixBarWidth}
	if total == 0 {
		return b
	}
	// Widths: proportional, with a floor so a single system block shows.
	floor := prefixBarWidth / 10
	var weights [3]int
	sum := 0
	for i, c := range counts {
		if c.n > 0 {
			weights[i] = max(c.n*prefixBarWidth/total, floor)
			sum += weights[i]
		}
	}
	x := 0
	seg := map[string]web.BarSegment{}
	for i, c := range counts {
		if c.n == 0 {
			continue
		}
		w := weights[i] * prefixBarWidth / sum
		s := web.BarSegment{Kind: c.kind, Blocks: c.n, X: x, W: w}
		b.Segments = append(b.Segments, s)
		seg[c.kind] = s
		x += w
	}
	if n := len(b.Segments); n > 0 {
		last := &b.Segments[n-1]
		last.W = prefixBarWidth - last.X // rounding
		seg[last.Kind] = *last
	}
	at := func(kind string, i int) int {
		s := seg[kind]
		if s.Blocks == 0 {
			return s.X
		}
		return s.X + min(i+1, s.Blocks)*s.W/s.Blocks
	}
	for _, m := range r.Markers {
		var xm int
		if g := markerAt.FindStringSubmatch(m.At); g != nil {
			i, _ := strconv.Atoi(g[2])
			xm = at(g[1], i)
		} else {
			xm = at("messages", m.MessageBlock)
		}
		b.Markers = append(b.Markers, web.BarMarker{At: m.At, TTL: string(m.TTL), X: min(xm, prefixBarWidth-1)})
	}
	return b
}

func pct(part, whole int) string {
	if whole <= 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + "%"
}

// usd is an amount in dollars to four decimals: a call costs fractions
// of a cent.
func usd(f float64) string {
	if f <= -0.00005 {
		return "−$" + strconv.FormatFloat(-f, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(max(f, 0), 'f', 4, 64)
}

// threadCalls is the prompt-cache panel of thread (empty without
// Routes.PromptCache).
func threadCalls(ctx context.Context, rt Routes, thread string) (web.PromptCacheView, error) {
	if rt.PromptCache == nil {
		return web.PromptCacheView{}, nil
	}
	recs, err := rt.PromptCache.Records(ctx, thread)
	if err != nil {
		return web.PromptCacheView{}, err
	}
	return PromptCacheView(recs), nil
}

// PromptCacheFragment answers GET /threads/{thread}/promptcache: the
// thread page's prompt-cache panel contents, as the page renders them (an
// HTML fragment; static/promptcache.js swaps it in when a model call is
// recorded).
func PromptCacheFragment(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		if _, err := rt.Runs.Thread(r.Context(), thread); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v, err := threadCalls(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		render(w, r, rt.Logger, http.StatusOK, web.PromptCacheCalls(v))
	})
}

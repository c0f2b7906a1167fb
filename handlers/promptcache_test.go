package handlers_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

func pcRecord(id string, read, write, input int) promptcache.Record {
	return promptcache.Record{CallID: id, ThreadID: "t", Node: "agent", LineageKey: "|agent", Lineage: "main", Provider: "anthropic", Model: "claude-sonnet-4-5",
		Usage: promptcache.Usage{Input: input, CacheRead: read, CacheWrite5m: write, Output: 10}, BlockCount: 6,
		Hashes:  promptcache.Hashes{ToolOrder: []string{"a", "b"}, SystemBlocks: []string{"s"}},
		Markers: []promptcache.Marker{{At: "tools[1]", TTL: "1h", MessageBlock: -1}, {At: "system[0]", TTL: "1h", MessageBlock: -1}, {At: "messages[1].content[0]", TTL: "5m", MessageBlock: 2}}}
}

// The view-model: totals add up every call; a break names what changed,
// or its suspected cause in words; a fork says how much of its prompt it
// read from its parent's entries; a subgraph's call is named as the
// drawing names its node; markers sit on their segments.
func TestPromptCacheView(t *testing.T) {
	t.Parallel()
	ttl := promptcache.SuspectTTLExpired
	a := pcRecord("call-a", 0, 1000, 20)
	a.CostUSD, a.CostUSDUncached = 0.004, 0.003
	b := pcRecord("call-b", 1000, 0, 20)
	b.CostUSD, b.CostUSDUncached = 0.0004, 0.003
	b.Break = promptcache.Break{Detected: true, ReadDropPct: 50, Suspected: &ttl}
	c := pcRecord("call-c", 900, 50, 10)
	c.Lineage, c.PrevCallID = "fork:branch", "call-a"
	d := pcRecord("call-d", 0, 10, 10)
	d.CheckpointNS, d.LineageKey = "react:123", "react|agent"
	d.Break = promptcache.Break{Detected: true, ReadDropPct: 100, ChangedDimensions: []promptcache.Dimension{promptcache.DimTools, promptcache.DimModel}, ChangedTools: []string{"b"}}
	v := handlers.PromptCacheView([]promptcache.Record{a, b, c, d})
	tot := v.Totals
	if tot.Calls != 4 || tot.Breaks != 2 || tot.Read != 1900 || tot.Write != 1060 || tot.Input != 60 || tot.Output != 40 || tot.Prompt != 3020 {
		t.Errorf("totals %+v", tot)
	}
	if tot.Cost != "$0.0044" || tot.Uncached != "$0.0060" || tot.Saving != "$0.0016" || tot.SavingPct != "26.7%" {
		t.Errorf("totals' money %+v", tot)
	}
	if got := v.Calls[0].Saving; got != "−$0.0010" {
		t.Errorf("a call that cost more than uncached saves %q", got)
	}
	if br := v.Calls[1].Break; br == nil || br.Suspected != "ttl_expired" || !strings.Contains(br.Text, "reads dropped 50.0%") || !strings.Contains(br.Text, "TTL expired") {
		t.Errorf("suspected break %+v", br)
	}
	if f := v.Calls[2].Fork; f == nil || f.Kind != "branch" || f.Parent != "call-a" || f.Read != 900 || f.Prompt != 960 ||
		f.Text != "fork (branch): read 900 of 960 prompt tokens (93.8%) from its parent's (call at agent, step 0) cache entries" {
		t.Errorf("fork %+v", f)
	}
	dc := v.Calls[3]
	if dc.Node != "react:agent" || dc.Break == nil || dc.Break.Text != "cache break: reads dropped 100.0%; changed: tools (b), model" {
		t.Errorf("subgraph call %+v %+v", dc, dc.Break)
	}
	bar := v.Calls[0].Bar
	if len(bar.Segments) != 3 || len(bar.Markers) != 3 {
		t.Fatalf("bar %+v", bar)
	}
	for i, m := range bar.Markers {
		s := bar.Segments[i]
		if m.X != s.X+s.W && !(i == 2 && m.X == bar.Width-1) {
			t.Errorf("marker %s at %d; its segment %s is %d..%d", m.At, m.X, s.Kind, s.X, s.X+s.W)
		}
	}
}

// A thread with more calls than the panel lists shows the latest ones
// and totals over all.
func TestPromptCacheViewBounded(t *testing.T) {
	t.Parallel()
	recs := make([]promptcache.Record, handlers.PromptCacheMaxCalls+5)
	for i := range recs {
		recs[i] = pcRecord("c"+strings.Repeat("x", i%3), 1, 1, 1)
	}
	v := handlers.PromptCacheView(recs)
	if len(v.Calls) != handlers.PromptCacheMaxCalls || v.Totals.Calls != len(recs) || v.Totals.Prompt != 3*len(recs) {
		t.Errorf("%d rows, totals %+v", len(v.Calls), v.Totals)
	}
}

type failingRecords struct{}

func (failingRecords) Records(context.Context, string) ([]promptcache.Record, error) {
	return nil, errors.New("store down")
}

// The fragment route: 404 for an unknown thread, the panel's rows for a
// known one, a 500 (logged) when the records cannot be read; without
// records the thread page's panel is hidden.
func TestPromptCacheFragment(t *testing.T) {
	t.Parallel()
	m, err := runs.NewManager(map[string]engine.Compiled{"fanin": fanInGraph(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if _, err := m.Start(context.Background(), "fanin", "known", map[string]any{}, runs.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Wait(context.Background(), "known"); err != nil {
		t.Fatal(err)
	}
	recs := mapRecords{"known": {pcRecord("call-1", 0, 1200, 5)}}
	for _, tc := range []struct {
		name string
		pc   handlers.CallRecords
		path string
		code int
		want string
	}{
		{"unknown thread", recs, "/threads/nope/promptcache", http.StatusNotFound, ""},
		{"rows", recs, "/threads/known/promptcache", http.StatusOK, `data-call="call-1"`},
		{"store down", failingRecords{}, "/threads/known/promptcache", http.StatusInternalServerError, ""},
		{"no layer", nil, "/threads/known/promptcache", http.StatusOK, `data-calls="0"`},
		{"page hides an empty panel", mapRecords{}, "/threads/known", http.StatusOK, `<section id="prompt-cache" hidden>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := chi.NewRouter()
			handlers.Routes{Runs: m, PromptCache: tc.pc, Logger: slog.New(slog.DiscardHandler)}.Mount(r)
			srv := httptest.NewServer(handlers.Secure(r))
			t.Cleanup(srv.Close)
			f := &fixture{srv: srv, runs: m}
			res := f.get(t, tc.path)
			if res.code != tc.code || !strings.Contains(res.body, tc.want) {
				t.Fatalf("%s: %d %.400s; want %d with %s", tc.path, res.code, res.body, tc.code, tc.want)
			}
		})
	}
}

type mapRecords map[string][]promptcache.Record

func (m mapRecords) Records(_ context.Context, thread string) ([]promptcache.Record, error) {
	return m[thread], nil
}

// An unpriced call shows "unpriced", not $0 as if it were free; the
// totals price the priced calls and say how many were left out, or say
// "unpriced" when none is priced; the fragment shows it.
func TestPromptCacheViewUnpriced(t *testing.T) {
	t.Parallel()
	priced := pcRecord("call-p", 0, 1000, 20)
	priced.CostUSD, priced.CostUSDUncached = 0.004, 0.003
	free := pcRecord("call-u", 1000, 0, 20)
	free.Unpriced = true
	cases := []struct {
		name      string
		recs      []promptcache.Record
		cost      string
		row       string // the last row's cost and saving
		html      string
		unpricedN int
	}{
		{"mixed", []promptcache.Record{priced, free}, "$0.0040", "unpriced", "without 1 unpriced call", 1},
		{"all unpriced", []promptcache.Record{free}, "unpriced", "unpriced", `<span class="pc-t-cost">unpriced</span>`, 1},
		{"all priced", []promptcache.Record{priced}, "$0.0040", "$0.0040", `<span class="pc-t-cost">$0.0040</span>`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := handlers.PromptCacheView(tc.recs)
			last := v.Calls[len(v.Calls)-1]
			if v.Totals.Cost != tc.cost || v.Totals.Unpriced != tc.unpricedN || last.Cost != tc.row || tc.row == "unpriced" && last.Saving != "unpriced" {
				t.Errorf("totals %+v, last row cost %q saving %q; want cost %q, row %q", v.Totals, last.Cost, last.Saving, tc.cost, tc.row)
			}
			var b strings.Builder
			if err := web.PromptCacheCalls(v).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.html) {
				t.Errorf("fragment lacks %q: %.600s", tc.html, b.String())
			}
		})
	}
}

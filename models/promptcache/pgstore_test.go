package promptcache_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// TestRecordsOnPostgres: records and latches kept in pgstore read back
// whole in a fresh Cache (a restarted process), and its next call on the
// thread compares with the stored one.
func TestRecordsOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := pgstore.New(ctx, pgtest.Schema(t, nil), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, promptcache.Config{Store: st, Prices: sonnet})
	m := f.anthropic(t, "claude-sonnet-4-5")
	tctx := promptcache.WithThread(ctx, "pg.thread/1")
	msgs := breakConversation()
	for _, add := range [][]models.Message{nil, {models.AI("one"), models.Human("And tomorrow?")}} {
		msgs = append(msgs, add...)
		if _, err := m.Generate(tctx, msgs, &models.CallOptions{Tools: eightTools}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := f.cache.Records(ctx, "pg.thread/1")
	if err != nil {
		t.Fatal(err)
	}

	restarted, err := promptcache.New(promptcache.Config{Store: st, Prices: sonnet, Now: f.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	after, err := restarted.Records(ctx, "pg.thread/1")
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 2 || len(after) != 2 {
		t.Fatalf("%d records, %d after a restart; want 2", len(before), len(after))
	}
	for i := range before {
		a, _ := json.Marshal(before[i])
		b, _ := json.Marshal(after[i])
		if string(a) != string(b) {
			t.Errorf("record %d changed on the way through Postgres:\n%s\n%s", i, a, b)
		}
	}
	if r := after[1]; r.Usage.CacheRead == 0 || r.CostUSD <= 0 || r.PrevCallID != after[0].CallID || len(r.Markers) == 0 {
		t.Errorf("stored record %+v", r)
	}

	m2, err := anthropic.New(anthropic.Config{APIKey: "sk-test", BaseURL: f.url, Model: "claude-sonnet-4-5", Hooks: restarted.Hooks()})
	if err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, models.AI("two"), models.Human("And after?"))
	if _, err := m2.Generate(tctx, msgs, &models.CallOptions{Tools: eightTools}); err != nil {
		t.Fatal(err)
	}
	recs, err := restarted.Records(ctx, "pg.thread/1")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2].PrevCallID != recs[1].CallID || recs[2].Break.Detected || len(recs[2].Pending) > 0 {
		t.Errorf("after a restart: %d records, the last %+v", len(recs), recs[len(recs)-1])
	}
}

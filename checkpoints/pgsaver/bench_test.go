package pgsaver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// floorInsert is the physical floor of a superstep: one INSERT of a row
// shaped like a checkpoint, committed, on the same pool.
func floorInsert(b *testing.B, pool *pgxpool.Pool, i int) {
	_, err := pool.Exec(context.Background(), `
		INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, checkpoint, metadata,
		                         blob_channels, blob_versions, blob_hashes)
		VALUES ('floor', '', $1, $2, NULL, $3::jsonb, '{"source":"loop","step":1,"parents":{}}'::jsonb, '{n}', '{1}', ARRAY[$4::bytea])`,
		checkpoints.NewID(), i, `{"v":1,"id":"x","channel_versions":{"n":1},"versions_seen":{"agent":{"n":1}}}`, []byte("0123456789abcdef"))
	if err != nil {
		b.Fatal(err)
	}
}

func BenchmarkPGFloorInsertCommit(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		floorInsert(b, pool, i)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/commit")
}

// BenchmarkPGPut is one superstep's checkpoint: a put with one changed
// small channel, in its own transaction. x-floor is its cost over the
// floor insert measured on the same pool just before.
func BenchmarkPGPut(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	s := pgsaver.New(pool, nil)
	ctx := context.Background()
	const floorRuns = 300
	start := time.Now()
	for i := range floorRuns {
		floorInsert(b, pool, i)
	}
	floor := float64(time.Since(start).Nanoseconds()) / floorRuns

	cfg := checkpoints.Config{ThreadID: "bench"}
	v := int64(0)
	put := func() {
		v++
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"counter": json.RawMessage(fmt.Sprint(v))},
			ChannelVersions: map[string]int64{"counter": v, "messages": 1, "question": 1},
			VersionsSeen:    map[string]map[string]int64{"agent": {"counter": v - 1}},
			UpdatedChannels: []string{"counter"},
		}
		var err error
		cfg, err = s.Put(ctx, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: int(v)}, map[string]int64{"counter": v})
		if err != nil {
			b.Fatal(err)
		}
	}
	put()
	b.ReportAllocs()
	for b.Loop() {
		put()
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/1e3, "µs/put")
	b.ReportMetric(perOp/floor, "x-floor")
}

// historyThread saves a thread of n checkpoints shaped like an agent's:
// a growing message list, a counter, metadata and a write per checkpoint.
func historyThread(b *testing.B, s checkpoints.Saver, n int) []checkpoints.Config {
	b.Helper()
	ctx := context.Background()
	cfg := checkpoints.Config{ThreadID: "history"}
	var cfgs []checkpoints.Config
	var msgs []string
	for i := range n {
		msgs = append(msgs, fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog", i))
		val, _ := json.Marshal(msgs)
		v := int64(i + 1)
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"messages": val, "step": json.RawMessage(fmt.Sprint(i))},
			ChannelVersions: map[string]int64{"messages": v, "step": v, "config": 1},
			VersionsSeen:    map[string]map[string]int64{"agent": {"messages": v - 1}, "tools": {"messages": v - 1}},
			UpdatedChannels: []string{"messages", "step"},
		}
		md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: "run-1", Extra: map[string]any{"user": "ann"}}
		var err error
		if cfg, err = s.Put(ctx, cfg, cp, md, map[string]int64{"messages": v, "step": v}); err != nil {
			b.Fatal(err)
		}
		if err := s.PutWrites(ctx, cfg, []checkpoints.Write{{Channel: "messages", Value: json.RawMessage(`["reply"]`)}}, "task-"+fmt.Sprint(i), ""); err != nil {
			b.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

func BenchmarkPGHistoryPage(b *testing.B) {
	s := pgsaver.New(pgtest.Schema(b, nil), nil)
	historyThread(b, s, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		page, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "history"}, checkpoints.ListOptions{Limit: 50, MetadataOnly: true})
		if err != nil || len(page) != 50 {
			b.Fatalf("%d tuples, %v", len(page), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/page")
}

func BenchmarkPGGetStateAt(b *testing.B) {
	s := pgsaver.New(pgtest.Schema(b, nil), nil)
	cfgs := historyThread(b, s, 1000)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		cfg := cfgs[rng.IntN(len(cfgs))]
		tu, err := s.Get(ctx, cfg)
		if err != nil || tu == nil || len(tu.PendingWrites) != 1 || len(tu.Checkpoint.ChannelValues) != 2 {
			b.Fatalf("Get(%v) = %+v, %v", cfg, tu, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/get")
}

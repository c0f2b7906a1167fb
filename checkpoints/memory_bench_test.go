package checkpoints_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

func BenchmarkMemoryHistoryPage(b *testing.B) {
	s := checkpoints.NewMemory()
	ctx := context.Background()
	cfg := checkpoints.Config{ThreadID: "history"}
	for i := range 1000 {
		v := int64(i + 1)
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))},
			ChannelVersions: map[string]int64{"messages": 1, "step": v},
			VersionsSeen:    map[string]map[string]int64{"agent": {"step": v - 1}},
			UpdatedChannels: []string{"step"},
		}
		md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: "run-1", Extra: map[string]any{"user": "ann"}}
		var err error
		if cfg, err = s.Put(ctx, cfg, cp, md, map[string]int64{"step": v}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		page, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "history"}, checkpoints.ListOptions{Limit: 50, MetadataOnly: true})
		if err != nil || len(page) != 50 {
			b.Fatalf("%d tuples, %v", len(page), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/page")
}

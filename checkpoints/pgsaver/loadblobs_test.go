package pgsaver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// A page of checkpoints of a long conversation reads each blob of their
// delta chains once: the chains share their snapshot and spine blobs, and
// a walk of whole rows sent those again for every chain (835 rows for 70
// blobs, 42 times the bytes, on a 400-step thread). The page's values are
// still each step's whole list.
func TestListingReadsEachBlobOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	s := New(pool, nil)
	cfg := checkpoints.Config{ThreadID: "talk"}
	var msgs []string
	for i := range 200 {
		msgs = append(msgs, fmt.Sprintf("%d %s", i, strings.Repeat("m", 500)))
		val, _ := json.Marshal(msgs)
		v := int64(i + 1)
		cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"messages": val},
			ChannelVersions: map[string]int64{"messages": v}, VersionsSeen: map[string]map[string]int64{}}
		var err error
		if cfg, err = s.Put(ctx, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}, map[string]int64{"messages": v}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "talk"}, checkpoints.ListOptions{Limit: 50})
	if err != nil || len(page) != 50 {
		t.Fatalf("%d tuples, %v", len(page), err)
	}
	for i, tu := range page {
		var got []string
		if err := json.Unmarshal(tu.Checkpoint.ChannelValues["messages"], &got); err != nil || len(got) != 200-i {
			t.Fatalf("checkpoint %d of the page holds %d messages, %v; want %d", i, len(got), err, 200-i)
		}
	}
	var threads []string
	var hashes [][]byte
	for _, tu := range page {
		var h []byte
		if err := pool.QueryRow(ctx, `SELECT value_hashes[1] FROM checkpoints WHERE thread_id = 'talk' AND checkpoint_id = $1`, tu.Config.CheckpointID).Scan(&h); err != nil {
			t.Fatal(err)
		}
		threads, hashes = append(threads, "talk"), append(hashes, h)
	}
	rows, err := pool.Query(ctx, sqlLoadBlobs, threads, hashes)
	if err != nil {
		t.Fatal(err)
	}
	n, seen := 0, map[string]bool{}
	for rows.Next() {
		var thread, enc string
		var h, base, data []byte
		if err := rows.Scan(&thread, &h, &enc, &base, &data); err != nil {
			t.Fatal(err)
		}
		n++
		seen[string(h)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(seen) {
		t.Errorf("the page's chains read %d blob rows for %d blobs, want each once", n, len(seen))
	}
}

package pgsaver

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestSkipDeltasRebuildEveryValue stores a list grown one element at a
// time as deltaPolicy says and rebuilds every value from the blobs alone,
// as a read does: each comes back as written, from at most its position's
// digit sum of deltas, and the stored bytes stay within a small multiple
// of the bytes appended.
func TestSkipDeltasRebuildEveryValue(t *testing.T) {
	for _, tc := range []struct {
		fanOut, maxChain, steps int
		// longest is the longest chain expected: the largest digit sum
		// of a position below steps.
		longest   int
		maxStored float64
	}{
		{16, 64, 1000, 32, 3},
		{4, 64, 300, 12, 5},
		{16, 5, 300, 5, 30}, // the cap starts new runs: more snapshots
	} {
		t.Run(fmt.Sprintf("fanout=%d,cap=%d", tc.fanOut, tc.maxChain), func(t *testing.T) {
			policy := deltaPolicy{fanOut: tc.fanOut, maxChain: tc.maxChain}
			blobs := map[hash]storedBlob{}
			var prev *lastValue
			var values [][]byte
			var msgs []string
			stored, appended := 0, 0
			for i := range tc.steps {
				msgs = append(msgs, fmt.Sprintf("message %d of a conversation that goes on", i))
				val, _ := json.Marshal(msgs)
				h := hashOf(val)
				enc, base, data, next := policy.store(prev, h, val)
				blobs[h] = storedBlob{encoding: enc, base: base, data: data}
				stored += len(data)
				if prev != nil {
					appended += len(val) - len(prev.value)
				} else {
					appended += len(val)
				}
				values, prev = append(values, val), next
			}
			longest := 0
			for i, want := range values {
				h := hashOf(want)
				got, err := resolveBlobs(blobs, [][]byte{h[:]})
				if err != nil {
					t.Fatalf("value %d: %v", i, err)
				}
				if string(got[h]) != string(want) {
					t.Fatalf("value %d rebuilt as %.40q..., want %.40q...", i, got[h], want)
				}
				chain := 0
				for b := blobs[h]; b.encoding == encAppend; b = blobs[hash(b.base)] {
					chain++
				}
				if chain > tc.maxChain {
					t.Fatalf("value %d replays %d deltas, more than the cap %d", i, chain, tc.maxChain)
				}
				longest = max(longest, chain)
			}
			if longest != tc.longest {
				t.Errorf("the longest chain replays %d deltas, want %d", longest, tc.longest)
			}
			if ratio := float64(stored) / float64(appended); ratio > tc.maxStored {
				t.Errorf("stored %.2fx the bytes appended, want at most %.0fx", ratio, tc.maxStored)
			}
		})
	}
}

func TestDigitSum(t *testing.T) {
	for _, tc := range []struct{ n, k, want int }{
		{0, 16, 0}, {15, 16, 15}, {16, 16, 1}, {767, 16, 32}, {999, 16, 24}, {7, 2, 3},
	} {
		if got := digitSum(tc.n, tc.k); got != tc.want {
			t.Errorf("digitSum(%d, %d) = %d, want %d", tc.n, tc.k, got, tc.want)
		}
	}
}

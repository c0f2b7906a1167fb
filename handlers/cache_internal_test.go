package handlers

import (
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
)

func TestTTLLeftAndAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		expires time.Time
		want    string
	}{
		{time.Time{}, "no expiry"},
		{now, "expiring"},
		{now.Add(-time.Second), "expiring"},
		{now.Add(300 * time.Millisecond), "<1s"},
		{now.Add(42 * time.Second), "42s"},
		{now.Add(5*time.Minute + 3*time.Second), "5m3s"},
		{now.Add(2*time.Hour + 30*time.Minute + 20*time.Second), "2h30m"},
	}
	for _, c := range cases {
		if got := ttlLeft(c.expires, now); got != c.want {
			t.Errorf("ttlLeft(now%+v) = %q, want %q", c.expires.Sub(now), got, c.want)
		}
	}
}

func TestCacheViewGroupsPerNode(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	zeta := "__pregel_ns_writes|id1|zeta"
	alpha := "__pregel_ns_writes|id2|alpha"
	infos := []cache.Info{ // newest first, as List returns them
		{Key: cache.Key{Namespace: zeta, Key: "k3"}, Size: 10, CreatedAt: now.Add(-time.Second), ExpiresAt: now.Add(time.Minute)},
		{Key: cache.Key{Namespace: alpha, Key: "k2"}, Size: 7, CreatedAt: now.Add(-2 * time.Second)},
		{Key: cache.Key{Namespace: zeta, Key: "k1"}, Size: 5, CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(10 * time.Second)},
		{Key: cache.Key{Namespace: "mine", Key: "k0"}, Size: 1, CreatedAt: now.Add(-3 * time.Hour)},
	}
	v := cacheView(infos, now)
	if len(v.Groups) != 3 {
		t.Fatalf("groups = %+v, want 3", v.Groups)
	}
	a, m, z := v.Groups[0], v.Groups[1], v.Groups[2]
	if a.Node != "alpha" || a.Identity != "id2" || a.Namespace != alpha || len(a.Entries) != 1 || a.Entries[0].TTL != "no expiry" {
		t.Errorf("alpha group = %+v", a)
	}
	if m.Node != "mine" || !m.Foreign || m.Namespace != "mine" {
		t.Errorf("foreign group = %+v", m)
	}
	if z.Node != "zeta" || z.Bytes != 15 || len(z.Entries) != 2 {
		t.Fatalf("zeta group = %+v", z)
	}
	if z.Entries[0].Key != "k3" || z.Entries[0].Age != "1s" || z.Entries[0].TTL != "1m0s" {
		t.Errorf("zeta newest entry = %+v, want k3 aged 1s with 1m0s left", z.Entries[0])
	}
	if z.Entries[1].Key != "k1" || z.Entries[1].Age != "1h0m" || z.Entries[1].TTL != "10s" {
		t.Errorf("zeta oldest entry = %+v, want k1 aged 1h0m with 10s left", z.Entries[1])
	}
	if v.Limited != 0 {
		t.Errorf("Limited = %d for a short list", v.Limited)
	}
}

func TestCacheViewSaysWhenItCut(t *testing.T) {
	t.Parallel()
	infos := make([]cache.Info, CacheListLimit+1)
	for i := range infos {
		infos[i] = cache.Info{Key: cache.Key{Namespace: "__pregel_ns_writes|i|n", Key: "k"}, Size: 1}
	}
	v := cacheView(infos, time.Now())
	if v.Limited != CacheListLimit || len(v.Groups) != 1 || len(v.Groups[0].Entries) != CacheListLimit {
		t.Errorf("Limited = %d, entries = %d; want both %d", v.Limited, len(v.Groups[0].Entries), CacheListLimit)
	}
}

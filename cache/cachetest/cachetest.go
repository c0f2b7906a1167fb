// Package cachetest is the conformance suite every cache.Cache
// implementation must pass, in the manner of river's riverdrivertest: the
// memory cache and the Postgres cache both call Exercise from their tests,
// so they cannot drift apart in behaviour the engine or the Studio relies
// on (expiry, clearing, listing order, input validation, copying).
package cachetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
)

// Cache is what the suite exercises: a node-result cache that can also be
// swept on demand, so the suite can check that sweeping removes exactly the
// expired entries.
type Cache interface {
	cache.Cache
	cache.Sweeper
}

// NewCache returns an empty cache, private to the calling test, that reads
// the time only from clock.Now (Postgres implementations must pass that
// time as a query parameter rather than use now() in SQL). It is called
// once per case; anything it starts must be stopped with t.Cleanup.
type NewCache func(t *testing.T, clock *FakeClock) Cache

// Exercise runs the conformance cases against caches made by newCache.
// Every case runs in parallel with its own clock and cache.
func Exercise(t *testing.T, newCache NewCache) {
	t.Helper()
	setup := func(t *testing.T) (Cache, *FakeClock) {
		t.Helper()
		clock := NewFakeClock(Start)
		return newCache(t, clock), clock
	}
	ctx := context.Background()

	t.Run("SetGetRoundTrip", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		want := map[cache.Key][]byte{
			key("a|f|node", "k1"):    []byte(`{"writes":[["x",1]]}`),
			key("a|f|node", "k2"):    {0, 1, 2, 255},
			key("b|g|other", "k1"):   []byte("different namespace, same key"),
			key("a|f|node", "empty"): {},
		}
		mustSet(t, c, entriesOf(want, 0)...)
		got := mustGet(t, c, slices.Collect(maps.Keys(want))...)
		assertValues(t, got, want)
		if v, ok := got[key("a|f|node", "empty")]; !ok || v == nil || len(v) != 0 {
			t.Errorf("an entry with an empty value came back as %#v, present=%v; want a present, empty, non-nil slice", v, ok)
		}
	})

	t.Run("NilValueIsStoredAsEmpty", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		k := key("ns", "nil")
		mustSet(t, c, cache.Entry{Key: k})
		got := mustGet(t, c, k)
		if v, ok := got[k]; !ok || v == nil || len(v) != 0 {
			t.Errorf("a nil value came back as %#v, present=%v; want a present, empty, non-nil slice", v, ok)
		}
	})

	t.Run("MissingKeysAreAbsent", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		if got := mustGet(t, c, key("ns", "nothing"), key("other", "nothing")); len(got) != 0 {
			t.Fatalf("Get on an empty cache = %v; want no entries", got)
		}
		mustSet(t, c, entry("ns", "present", "v", 0))
		got := mustGet(t, c, key("ns", "present"), key("ns", "absent"), key("other", "present"))
		assertValues(t, got, map[cache.Key][]byte{key("ns", "present"): []byte("v")})
	})

	t.Run("OverwriteReplacesValueTimeAndTTL", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		k := key("ns", "k")
		mustSet(t, c, entry("ns", "k", "first", time.Minute))
		clock.Advance(30 * time.Second)
		mustSet(t, c, entry("ns", "k", "second, and longer", 0))
		assertValues(t, mustGet(t, c, k), map[cache.Key][]byte{k: []byte("second, and longer")})
		assertList(t, mustList(t, c, "ns", 0), []cache.Info{
			{Key: k, Size: len("second, and longer"), CreatedAt: Start.Add(30 * time.Second)},
		})
		// The first TTL is gone with the first value.
		clock.Advance(time.Hour)
		assertValues(t, mustGet(t, c, k), map[cache.Key][]byte{k: []byte("second, and longer")})
	})

	t.Run("DuplicateKeysInOneSetLastWins", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		k := key("ns", "dup")
		mustSet(t, c, entry("ns", "dup", "one", 0), entry("ns", "other", "x", 0), entry("ns", "dup", "two", time.Minute))
		assertValues(t, mustGet(t, c, k), map[cache.Key][]byte{k: []byte("two")})
		infos := mustList(t, c, "ns", 0)
		if len(infos) != 2 {
			t.Fatalf("List after a Set with a duplicate key = %v; want 2 entries", infos)
		}
		for _, info := range infos {
			if info.Key == k && !info.ExpiresAt.Equal(Start.Add(time.Minute)) {
				t.Errorf("the duplicate key expires at %v; want the last entry's TTL (%v)", info.ExpiresAt, Start.Add(time.Minute))
			}
		}
	})

	t.Run("TTLExpiresExactlyAtTheBoundary", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		k := key("ns", "k")
		ttl := 10 * time.Second
		mustSet(t, c, entry("ns", "k", "v", ttl))

		clock.Set(Start.Add(ttl - time.Microsecond))
		assertValues(t, mustGet(t, c, k), map[cache.Key][]byte{k: []byte("v")})
		if got := mustList(t, c, "ns", 0); len(got) != 1 {
			t.Errorf("one microsecond before expiry List = %v; want the entry", got)
		}

		clock.Set(Start.Add(ttl))
		if got := mustGet(t, c, k); len(got) != 0 {
			t.Errorf("at the expiry instant Get = %v; want a miss (an entry lives for [set, set+TTL))", got)
		}
		if got := mustList(t, c, "ns", 0); len(got) != 0 {
			t.Errorf("at the expiry instant List = %v; want nothing", got)
		}
	})

	t.Run("ZeroTTLNeverExpires", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		k := key("ns", "forever")
		mustSet(t, c, entry("ns", "forever", "v", 0))
		clock.Advance(100 * 365 * 24 * time.Hour)
		assertValues(t, mustGet(t, c, k), map[cache.Key][]byte{k: []byte("v")})
		if n, err := c.Sweep(ctx); err != nil || n != 0 {
			t.Errorf("Sweep a century later = %d, %v; want 0 removed", n, err)
		}
		assertList(t, mustList(t, c, "ns", 0), []cache.Info{{Key: k, Size: 1, CreatedAt: Start}})
	})

	t.Run("ExpiredEntriesAreInvisibleBeforeASweep", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		mustSet(t, c, entry("ns", "short", "s", time.Minute), entry("ns", "long", "l", time.Hour), entry("other", "short", "s", time.Minute))
		clock.Advance(time.Minute)
		got := mustGet(t, c, key("ns", "short"), key("ns", "long"), key("other", "short"))
		assertValues(t, got, map[cache.Key][]byte{key("ns", "long"): []byte("l")})
		assertList(t, mustList(t, c, "", 0), []cache.Info{
			{Key: key("ns", "long"), Size: 1, CreatedAt: Start, ExpiresAt: Start.Add(time.Hour)},
		})
	})

	t.Run("SweepRemovesExactlyTheExpired", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		mustSet(t, c,
			entry("a", "1m", "x", time.Minute),
			entry("b", "1m", "x", time.Minute),
			entry("a", "2m", "y", 2*time.Minute),
			entry("a", "never", "z", 0),
		)
		if n, err := c.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("Sweep before anything expired = %d, %v; want 0", n, err)
		}
		clock.Advance(time.Minute)
		if n, err := c.Sweep(ctx); err != nil || n != 2 {
			t.Fatalf("Sweep after one minute = %d, %v; want 2 removed", n, err)
		}
		if n, err := c.Sweep(ctx); err != nil || n != 0 {
			t.Fatalf("a second Sweep = %d, %v; want 0 (already removed)", n, err)
		}
		// Turning the clock back shows the expired entries were deleted,
		// not merely hidden, and that the others were left alone.
		clock.Set(Start)
		got := mustGet(t, c, key("a", "1m"), key("b", "1m"), key("a", "2m"), key("a", "never"))
		assertValues(t, got, map[cache.Key][]byte{
			key("a", "2m"):    []byte("y"),
			key("a", "never"): []byte("z"),
		})
	})

	t.Run("ClearNamespacesLeavesOthers", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		mustSet(t, c,
			entry("ns1", "k", "1", 0), entry("ns1", "k2", "1", time.Hour),
			entry("ns2", "k", "2", 0),
			entry("ns3", "k", "3", 0),
			entry("ns10", "k", "10", 0), // a prefix of no cleared namespace
		)
		if err := c.Clear(ctx, []string{"ns1", "ns3", "never-used"}); err != nil {
			t.Fatalf("Clear: %v", err)
		}
		got := mustGet(t, c, key("ns1", "k"), key("ns1", "k2"), key("ns2", "k"), key("ns3", "k"), key("ns10", "k"))
		assertValues(t, got, map[cache.Key][]byte{key("ns2", "k"): []byte("2"), key("ns10", "k"): []byte("10")})
		if got := mustList(t, c, "ns1", 0); len(got) != 0 {
			t.Errorf("List of a cleared namespace = %v; want nothing", got)
		}
	})

	for name, namespaces := range map[string][]string{"nil": nil, "empty": {}} {
		t.Run("ClearAllWith_"+name, func(t *testing.T) {
			t.Parallel()
			c, _ := setup(t)
			mustSet(t, c, entry("ns1", "k", "1", 0), entry("ns2", "k", "2", time.Hour))
			if err := c.Clear(ctx, namespaces); err != nil {
				t.Fatalf("Clear(%#v): %v", namespaces, err)
			}
			if got := mustGet(t, c, key("ns1", "k"), key("ns2", "k")); len(got) != 0 {
				t.Errorf("after Clear(%#v) Get = %v; want nothing", namespaces, got)
			}
			if got := mustList(t, c, "", 0); len(got) != 0 {
				t.Errorf("after Clear(%#v) List = %v; want nothing", namespaces, got)
			}
		})
	}

	t.Run("ListNewestFirstWithTTLAndSize", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		mustSet(t, c, entry("n1", "old", "12345", time.Hour))
		clock.Advance(time.Second)
		mustSet(t, c, entry("n2", "mid", "", 0))
		clock.Advance(time.Second)
		// Two entries at one instant are ordered by namespace, then key.
		mustSet(t, c, entry("n1", "new-b", "ab", 90*time.Second), entry("n1", "new-a", "abc", 0), entry("n0", "new", "x", 0))
		t1, t2 := Start.Add(time.Second), Start.Add(2*time.Second)

		all := []cache.Info{
			{Key: key("n0", "new"), Size: 1, CreatedAt: t2},
			{Key: key("n1", "new-a"), Size: 3, CreatedAt: t2},
			{Key: key("n1", "new-b"), Size: 2, CreatedAt: t2, ExpiresAt: t2.Add(90 * time.Second)},
			{Key: key("n2", "mid"), Size: 0, CreatedAt: t1},
			{Key: key("n1", "old"), Size: 5, CreatedAt: Start, ExpiresAt: Start.Add(time.Hour)},
		}
		assertList(t, mustList(t, c, "", 0), all)
		assertList(t, mustList(t, c, "", 2), all[:2])
		assertList(t, mustList(t, c, "", 100), all)
		assertList(t, mustList(t, c, "n1", 0), []cache.Info{all[1], all[2], all[4]})
		assertList(t, mustList(t, c, "n1", 1), []cache.Info{all[1]})
		assertList(t, mustList(t, c, "n2", 0), []cache.Info{all[3]})
		assertList(t, mustList(t, c, "missing", 0), nil)

		// Once new-b expires it leaves the listing.
		clock.Set(t2.Add(90 * time.Second))
		assertList(t, mustList(t, c, "n1", 0), []cache.Info{all[1], all[4]})
	})

	t.Run("ManyKeysInOneGet", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		want := make(map[cache.Key][]byte)
		var keys []cache.Key
		for i := range 600 {
			k := key(fmt.Sprintf("graph|mod.fn|node%d", i%3), fmt.Sprintf("%032x", i))
			keys = append(keys, k)
			if i%5 != 0 { // every fifth key is never set
				want[k] = fmt.Appendf(nil, "value %d", i)
			}
		}
		mustSet(t, c, entriesOf(want, time.Hour)...)
		assertValues(t, mustGet(t, c, keys...), want)
	})

	t.Run("ConcurrentSetAndGet", func(t *testing.T) {
		t.Parallel()
		c, clock := setup(t)
		const workers, rounds = 8, 20
		shared := key("shared", "k")
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				ns := fmt.Sprintf("worker%d", w)
				for r := range rounds {
					own := entry(ns, fmt.Sprintf("k%d", r), fmt.Sprintf("%d/%d", w, r), time.Hour)
					sharedEntry := cache.Entry{Key: shared, Value: fmt.Appendf(nil, "from %d", w)}
					if err := c.Set(ctx, []cache.Entry{own, sharedEntry}); err != nil {
						t.Errorf("worker %d: Set: %v", w, err)
						return
					}
					got, err := c.Get(ctx, []cache.Key{own.Key, shared})
					if err != nil {
						t.Errorf("worker %d: Get: %v", w, err)
						return
					}
					if !bytes.Equal(got[own.Key], own.Value) {
						t.Errorf("worker %d: own key %v = %q; want %q", w, own.Key, got[own.Key], own.Value)
					}
					if v, ok := got[shared]; !ok || !bytes.HasPrefix(v, []byte("from ")) {
						t.Errorf("worker %d: shared key = %q, %v; want some worker's value", w, v, ok)
					}
					if r%5 == 0 {
						if _, err := c.List(ctx, ns, 3); err != nil {
							t.Errorf("worker %d: List: %v", w, err)
						}
						clock.Advance(time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		if got := mustList(t, c, "", 0); len(got) != workers*rounds+1 {
			t.Errorf("after the workers List has %d entries; want %d", len(got), workers*rounds+1)
		}
	})

	t.Run("EmptyInputsAreNoOps", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		for _, keys := range [][]cache.Key{nil, {}} {
			got, err := c.Get(ctx, keys)
			if err != nil || len(got) != 0 {
				t.Errorf("Get(%#v) = %v, %v; want no entries, no error", keys, got, err)
			}
		}
		for _, entries := range [][]cache.Entry{nil, {}} {
			if err := c.Set(ctx, entries); err != nil {
				t.Errorf("Set(%#v) = %v; want no error", entries, err)
			}
		}
		if got := mustList(t, c, "", 0); len(got) != 0 {
			t.Errorf("List after empty Sets = %v; want nothing", got)
		}
		if n, err := c.Sweep(ctx); err != nil || n != 0 {
			t.Errorf("Sweep of an empty cache = %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("ValuesAreCopied", func(t *testing.T) {
		t.Parallel()
		c, _ := setup(t)
		k := key("ns", "k")
		in := []byte("original")
		mustSet(t, c, cache.Entry{Key: k, Value: in})
		copy(in, "CHANGED!")
		out := mustGet(t, c, k)[k]
		if string(out) != "original" {
			t.Fatalf("after the caller changed its slice Get = %q; want %q", out, "original")
		}
		copy(out, "CHANGED!")
		if again := mustGet(t, c, k)[k]; string(again) != "original" {
			t.Fatalf("after the caller changed a returned slice Get = %q; want %q", again, "original")
		}
	})

	t.Run("InvalidInputIsRejected", func(t *testing.T) {
		t.Parallel()
		good := entry("ns", "good", "v", 0)
		cases := []struct {
			name string
			call func(c Cache) error
			want string // a fragment the message must contain
		}{
			{"get empty namespace", func(c Cache) error { _, err := c.Get(ctx, []cache.Key{key("ns", "k"), key("", "k")}); return err }, "namespace is empty"},
			{"get empty key", func(c Cache) error { _, err := c.Get(ctx, []cache.Key{key("ns", "")}); return err }, "key is empty"},
			{"get NUL in key", func(c Cache) error { _, err := c.Get(ctx, []cache.Key{key("ns", "a\x00b")}); return err }, "NUL"},
			{"set invalid UTF-8 namespace", func(c Cache) error { return c.Set(ctx, []cache.Entry{good, entry("n\xff", "k", "v", 0)}) }, "UTF-8"},
			{"set NUL in namespace", func(c Cache) error { return c.Set(ctx, []cache.Entry{good, entry("n\x00", "k", "v", 0)}) }, "NUL"},
			{"set negative TTL", func(c Cache) error { return c.Set(ctx, []cache.Entry{good, entry("ns", "k", "v", -time.Second)}) }, "negative"},
			{"clear empty namespace", func(c Cache) error { return c.Clear(ctx, []string{"ns", ""}) }, "namespace is empty"},
			{"list negative limit", func(c Cache) error { _, err := c.List(ctx, "ns", -1); return err }, "negative"},
			{"list NUL namespace", func(c Cache) error { _, err := c.List(ctx, "\x00", 0); return err }, "NUL"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				c, _ := setup(t)
				mustSet(t, c, entry("ns", "kept", "v", 0))
				err := tc.call(c)
				if !errors.Is(err, cache.ErrInvalid) {
					t.Fatalf("got %v; want an error matching cache.ErrInvalid", err)
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %q does not say %q", err, tc.want)
				}
				// A rejected call changes nothing: not even the valid
				// entries beside the bad one are stored or cleared.
				got := mustGet(t, c, key("ns", "kept"), good.Key)
				assertValues(t, got, map[cache.Key][]byte{key("ns", "kept"): []byte("v")})
			})
		}
	})
}

func key(ns, k string) cache.Key { return cache.Key{Namespace: ns, Key: k} }

func entry(ns, k, v string, ttl time.Duration) cache.Entry {
	return cache.Entry{Key: key(ns, k), Value: []byte(v), TTL: ttl}
}

func entriesOf(values map[cache.Key][]byte, ttl time.Duration) []cache.Entry {
	var out []cache.Entry
	for k, v := range values {
		out = append(out, cache.Entry{Key: k, Value: v, TTL: ttl})
	}
	return out
}

func mustSet(t *testing.T, c Cache, entries ...cache.Entry) {
	t.Helper()
	if err := c.Set(context.Background(), entries); err != nil {
		t.Fatalf("Set: %v", err)
	}
}

func mustGet(t *testing.T, c Cache, keys ...cache.Key) map[cache.Key][]byte {
	t.Helper()
	got, err := c.Get(context.Background(), keys)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return got
}

func mustList(t *testing.T, c Cache, ns string, limit int) []cache.Info {
	t.Helper()
	got, err := c.List(context.Background(), ns, limit)
	if err != nil {
		t.Fatalf("List(%q, %d): %v", ns, limit, err)
	}
	return got
}

func assertValues(t *testing.T, got, want map[cache.Key][]byte) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%v: missing; want %q", k, w)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%v = %q; want %q", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%v = %q; want it absent", k, g)
		}
	}
}

func assertList(t *testing.T, got, want []cache.Info) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		same = g.Key == w.Key && g.Size == w.Size && g.CreatedAt.Equal(w.CreatedAt) &&
			g.ExpiresAt.Equal(w.ExpiresAt) && g.ExpiresAt.IsZero() == w.ExpiresAt.IsZero()
	}
	if !same {
		t.Errorf("List:\n got %s\nwant %s", formatInfos(got), formatInfos(want))
	}
}

func formatInfos(infos []cache.Info) string {
	var b strings.Builder
	for _, in := range infos {
		exp := "never"
		if !in.ExpiresAt.IsZero() {
			exp = in.ExpiresAt.UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(&b, "\n\t%s/%s size=%d created=%s expires=%s", in.Key.Namespace, in.Key.Key, in.Size, in.CreatedAt.UTC().Format(time.RFC3339Nano), exp)
	}
	if b.Len() == 0 {
		return "(none)"
	}
	return b.String()
}

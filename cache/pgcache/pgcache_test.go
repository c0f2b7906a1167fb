package pgcache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/cache/cachetest"
	"github.com/superstep-dev/superstep/cache/pgcache"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	cachetest.Exercise(t, func(t *testing.T, clock *cachetest.FakeClock) cachetest.Cache {
		c, err := pgcache.New(pgtest.Schema(t, nil), &pgcache.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
}

// setup gives a test a cache on a schema of its own, the pool (to tamper
// with rows directly), and the cache's clock.
func setup(t *testing.T, opts *pgcache.Options) (*pgcache.Cache, *pgxpool.Pool, *cachetest.FakeClock) {
	t.Helper()
	pool := pgtest.Schema(t, nil)
	clock := cachetest.NewFakeClock(cachetest.Start)
	if opts == nil {
		opts = &pgcache.Options{}
	}
	opts.Now = clock.Now
	c, err := pgcache.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, pool, clock
}

func rowCount(t *testing.T, pool *pgxpool.Pool, k cache.Key) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM node_cache WHERE namespace = $1 AND key = $2`, k.Namespace, k.Key).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestTamperedRowIsAMiss alters a signed row directly in SQL, as someone
// with write access to the database could, and checks that the cache
// neither returns nor lists it, deletes it, and leaves its neighbours.
func TestTamperedRowIsAMiss(t *testing.T) {
	t.Parallel()
	target := cache.Key{Namespace: "graph|app.plan|plan", Key: "0123456789abcdef0123456789abcdef"}
	cases := []struct {
		name   string
		tamper string // SQL run after Set; $1, $2 are the target's namespace and key
	}{
		{"value replaced", `UPDATE node_cache SET value = '[["route","attacker"]]' WHERE namespace = $1 AND key = $2`},
		{"one byte of the value flipped", `UPDATE node_cache SET value = set_byte(value, 0, get_byte(value, 0) # 1) WHERE namespace = $1 AND key = $2`},
		{"expiry extended", `UPDATE node_cache SET expires_at = expires_at + interval '1 year' WHERE namespace = $1 AND key = $2`},
		{"expiry removed", `UPDATE node_cache SET expires_at = NULL WHERE namespace = $1 AND key = $2`},
		{"creation time moved", `UPDATE node_cache SET created_at = created_at - interval '1 second' WHERE namespace = $1 AND key = $2`},
		{"MAC emptied", `UPDATE node_cache SET mac = '' WHERE namespace = $1 AND key = $2`},
		{"MAC truncated", `UPDATE node_cache SET mac = substring(mac from 1 for 16) WHERE namespace = $1 AND key = $2`},
		{"valid row copied under the target key", `
			UPDATE node_cache AS t SET value = s.value, mac = s.mac, created_at = s.created_at, expires_at = s.expires_at
			FROM node_cache AS s WHERE t.namespace = $1 AND t.key = $2 AND s.key = 'neighbour'`},
		{"valid row copied into another namespace", `
			UPDATE node_cache AS t SET value = s.value, mac = s.mac, created_at = s.created_at, expires_at = s.expires_at
			FROM node_cache AS s WHERE t.namespace = $1 AND t.key = $2 AND s.namespace = 'other|x|y' AND s.key = $2`},
		{"row forged from scratch", `
			UPDATE node_cache SET value = '\x00', mac = sha256('\x00'::bytea), created_at = '2026-03-01T12:00:00Z', expires_at = NULL
			WHERE namespace = $1 AND key = $2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c, pool, _ := setup(t, nil)
			neighbour := cache.Key{Namespace: target.Namespace, Key: "neighbour"}
			other := cache.Key{Namespace: "other|x|y", Key: target.Key}
			err := c.Set(ctx, []cache.Entry{
				{Key: target, Value: []byte(`[["route","plan"]]`), TTL: time.Hour},
				{Key: neighbour, Value: []byte(`[["n",1]]`), TTL: 2 * time.Hour},
				{Key: other, Value: []byte(`[["o",2]]`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, tc.tamper, target.Namespace, target.Key); err != nil {
				t.Fatalf("tamper: %v", err)
			}

			infos, err := c.List(ctx, target.Namespace, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(infos) != 1 || infos[0].Key != neighbour {
				t.Errorf("List = %v; want only the neighbour (the tampered row left out)", infos)
			}
			// List already deleted it; tamper again so Get meets it too.
			if rowCount(t, pool, target) != 0 {
				t.Fatalf("List left the tampered row in the table")
			}
			if err := c.Set(ctx, []cache.Entry{{Key: target, Value: []byte(`[["route","plan"]]`), TTL: time.Hour}}); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, tc.tamper, target.Namespace, target.Key); err != nil {
				t.Fatalf("tamper again: %v", err)
			}
			got, err := c.Get(ctx, []cache.Key{target, neighbour, other})
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := got[target]; ok {
				t.Errorf("Get returned the tampered row's value %q; want a miss", v)
			}
			if !bytes.Equal(got[neighbour], []byte(`[["n",1]]`)) || !bytes.Equal(got[other], []byte(`[["o",2]]`)) {
				t.Errorf("Get = %q; want the untouched neighbours intact", got)
			}
			if n := rowCount(t, pool, target); n != 0 {
				t.Errorf("after Get the tampered row is still stored (%d rows); want it deleted", n)
			}
			// The engine re-runs the node and caches a fresh, valid result.
			if err := c.Set(ctx, []cache.Entry{{Key: target, Value: []byte("fresh")}}); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(ctx, []cache.Key{target}); err != nil || string(got[target]) != "fresh" {
				t.Errorf("after re-caching Get = %q, %v; want %q", got, err, "fresh")
			}
		})
	}
}

// TestKeys checks that entries are readable exactly by caches sharing the
// HMAC key: a cache with another (or a random) key sees them as misses and
// deletes them.
func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyA := bytes.Repeat([]byte{0xA1}, pgcache.MinKeySize)
	keyB := bytes.Repeat([]byte{0xB2}, pgcache.MinKeySize+8)
	cases := []struct {
		name        string
		writer      []byte
		reader      []byte
		wantHit     bool
		wantRemains bool
	}{
		{"same explicit key", keyA, keyA, true, true},
		{"different explicit keys", keyA, keyB, false, false},
		{"random writer key, explicit reader", nil, keyA, false, false},
		{"two random per-process keys", nil, nil, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			writer, pool, clock := setup(t, &pgcache.Options{Key: tc.writer})
			reader, err := pgcache.New(pool, &pgcache.Options{Key: tc.reader, Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			k := cache.Key{Namespace: "ns", Key: "k"}
			if err := writer.Set(ctx, []cache.Entry{{Key: k, Value: []byte("v")}}); err != nil {
				t.Fatal(err)
			}
			got, err := reader.Get(ctx, []cache.Key{k})
			if err != nil {
				t.Fatal(err)
			}
			if _, hit := got[k]; hit != tc.wantHit {
				t.Errorf("reader hit = %v; want %v", hit, tc.wantHit)
			}
			if remains := rowCount(t, pool, k) == 1; remains != tc.wantRemains {
				t.Errorf("row remains after the read = %v; want %v", remains, tc.wantRemains)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	if _, err := pgcache.New(pool, &pgcache.Options{Key: []byte("short secret")}); !errors.Is(err, pgcache.ErrKeyTooShort) {
		t.Errorf("New with a 12-byte key: %v; want ErrKeyTooShort", err)
	}
	if _, err := pgcache.New(nil, nil); err == nil {
		t.Error("New(nil pool) succeeded; want an error")
	}
}

// TestSweepCrossesBatches expires more rows than one sweep statement
// deletes and checks that one Sweep removes them all.
func TestSweepCrossesBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _, clock := setup(t, nil)
	n := 2*pgcache.SweepBatch + 7
	entries := make([]cache.Entry, 0, n+1)
	for i := range n {
		entries = append(entries, cache.Entry{Key: cache.Key{Namespace: "ns", Key: fmt.Sprint(i)}, Value: []byte("v"), TTL: time.Minute})
	}
	entries = append(entries, cache.Entry{Key: cache.Key{Namespace: "ns", Key: "kept"}, Value: []byte("v")})
	if err := c.Set(ctx, entries); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if got, err := c.Sweep(ctx); err != nil || got != n {
		t.Fatalf("Sweep = %d, %v; want %d", got, err, n)
	}
	clock.Set(cachetest.Start)
	if infos, err := c.List(ctx, "ns", 0); err != nil || len(infos) != 1 {
		t.Fatalf("List after the sweep = %d entries, %v; want only ns/kept", len(infos), err)
	}
}

// TestBackgroundSweeper checks that the interval sweeper deletes expired
// rows by itself and reports through OnSweep.
func TestBackgroundSweeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type sweep struct {
		n   int
		err error
	}
	swept := make(chan sweep, 1)
	c, pool, clock := setup(t, &pgcache.Options{
		SweepInterval: time.Millisecond,
		OnSweep: func(n int, err error) {
			if n > 0 || err != nil {
				select {
				case swept <- sweep{n, err}:
				default:
				}
			}
		},
	})
	k := cache.Key{Namespace: "ns", Key: "k"}
	if err := c.Set(ctx, []cache.Entry{{Key: k, Value: []byte("v"), TTL: time.Second}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	select {
	case s := <-swept:
		if s.err != nil || s.n != 1 {
			t.Errorf("background sweep = %d, %v; want 1 removed", s.n, s.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the background sweeper did not remove the expired row within 10s")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if rowCount(t, pool, k) != 0 {
		t.Error("the expired row is still stored after the sweep")
	}
}

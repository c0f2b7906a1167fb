package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/store"
)

func testTTLExpiryAndRefresh(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	ns := []string{"ttl"}
	for _, k := range []string{"refreshed", "unrefreshed", "searched"} {
		e.do(store.PutOp{Namespace: ns, Key: k, Value: map[string]any{"k": k}, TTL: 10 * time.Minute})
	}
	e.put(ns, "permanent", map[string]any{})
	start := e.clock.Now()

	e.clock.Advance(9 * time.Minute)
	if e.get(ns, "refreshed") == nil {
		t.Fatal("item gone before its TTL")
	}
	if e.do(store.GetOp{Namespace: ns, Key: "unrefreshed", RefreshTTL: ptr(false)}).Item == nil {
		t.Fatal("item gone before its TTL")
	}
	if got := e.search(store.SearchOp{NamespacePrefix: ns, Filter: map[string]any{"k": "searched"}}); len(got) != 1 {
		t.Fatalf("search before expiry = %v", keys(got))
	}

	// Exactly at the TTL the item is expired.
	e.clock.Advance(time.Minute)
	if it := e.get(ns, "unrefreshed"); it != nil {
		t.Errorf("unrefreshed item still returned at its expiry time")
	}
	for _, k := range []string{"refreshed", "searched", "permanent"} {
		if e.do(store.GetOp{Namespace: ns, Key: k, RefreshTTL: ptr(false)}).Item == nil {
			t.Errorf("%s gone at 10m, want kept (refreshed at 9m, or permanent)", k)
		}
	}
	e.clock.Advance(9*time.Minute - time.Microsecond)
	if e.do(store.GetOp{Namespace: ns, Key: "refreshed", RefreshTTL: ptr(false)}).Item == nil {
		t.Error("refreshed item gone a microsecond before its refreshed expiry")
	}
	e.clock.Advance(time.Microsecond)
	for _, k := range []string{"refreshed", "searched"} {
		if e.get(ns, k) != nil {
			t.Errorf("%s still returned 10m after its last read", k)
		}
	}
	// Put over an expired (unswept) item starts a new item.
	e.put(ns, "unrefreshed", map[string]any{"again": true})
	it := e.get(ns, "unrefreshed")
	if it == nil || !it.CreatedAt.Equal(e.clock.Now()) || it.CreatedAt.Equal(start) {
		t.Errorf("re-put after expiry = %+v, want created now", it)
	}
}

func testTTLDefaults(t *testing.T, open Opener) {
	e := setup(t, open, func(o *store.Options) {
		o.TTL = store.TTLConfig{Default: 5 * time.Minute, NoRefreshOnRead: true}
	})
	ns := []string{"d"}
	e.put(ns, "default", map[string]any{})
	e.do(store.PutOp{Namespace: ns, Key: "forever", Value: map[string]any{}, TTL: store.NoTTL})
	e.do(store.PutOp{Namespace: ns, Key: "long", Value: map[string]any{}, TTL: time.Hour})
	e.do(store.PutOp{Namespace: ns, Key: "optin", Value: map[string]any{}})

	e.clock.Advance(4 * time.Minute)
	e.get(ns, "default") // the store does not refresh on read
	e.do(store.GetOp{Namespace: ns, Key: "optin", RefreshTTL: ptr(true)})
	e.clock.Advance(2 * time.Minute)
	for k, want := range map[string]bool{"default": false, "forever": true, "long": true, "optin": true} {
		if got := e.get(ns, k) != nil; got != want {
			t.Errorf("%s present at 6m = %v, want %v", k, got, want)
		}
	}
}

func testTTLSearchAndList(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	e.do(store.PutOp{Namespace: []string{"gone", "a"}, Key: "k", Value: map[string]any{"x": 1}, TTL: time.Minute})
	e.do(store.PutOp{Namespace: []string{"kept"}, Key: "k", Value: map[string]any{"x": 1}})
	e.clock.Advance(time.Minute)
	if got := e.search(store.SearchOp{Filter: map[string]any{"x": 1}}); !reflect.DeepEqual(keys(got), []string{"k"}) || got[0].Namespace[0] != "kept" {
		t.Errorf("search after expiry = %+v, want only kept/k", got)
	}
	if got := e.do(store.ListNamespacesOp{}).Namespaces; !reflect.DeepEqual(got, [][]string{{"kept"}}) {
		t.Errorf("namespaces after expiry = %v, want [[kept]]", got)
	}
}

func testSweep(t *testing.T, open Opener) {
	e := setup(t, open, nil)
	for i, ttl := range []time.Duration{time.Minute, time.Minute, time.Hour, 0} {
		e.do(store.PutOp{Namespace: []string{"s"}, Key: string(rune('a' + i)), Value: map[string]any{"t": "apple"}, TTL: ttl})
	}
	if n, err := e.s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep before expiry = %d, %v; want 0", n, err)
	}
	e.clock.Advance(2 * time.Minute)
	if n, err := e.s.Sweep(ctx); err != nil || n != 2 {
		t.Fatalf("sweep = %d, %v; want 2", n, err)
	}
	if n, err := e.s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second sweep = %d, %v; want 0", n, err)
	}
	got := e.search(store.SearchOp{Query: "apple"})
	if !reflect.DeepEqual(keys(got), []string{"c", "d"}) {
		t.Errorf("vector search after sweep = %v, want [c d]", keys(got))
	}
}

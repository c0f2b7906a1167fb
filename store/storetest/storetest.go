// Package storetest is the conformance suite every store.Store
// implementation passes: run Exercise from the implementation's tests.
// The same cases, with the same expected results, run against the memory
// and the Postgres store, so the two cannot drift apart.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/internal/testclock"
	"github.com/superstep-dev/superstep/store"
)

// Opener opens a new, empty store with opts for one test. It registers
// any cleanup with t.
type Opener func(t *testing.T, opts store.Options) store.Store

// Clock is a manual clock for TTL tests.
type Clock = testclock.Clock

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// Exercise runs the conformance suite against stores made by open.
func Exercise(t *testing.T, open Opener) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"PutGetDelete", testPutGetDelete},
		{"InvalidNamespacesAndKeys", testInvalidNamespacesAndKeys},
		{"InvalidValues", testInvalidValues},
		{"InvalidOps", testInvalidOps},
		{"BatchSemantics", testBatchSemantics},
		{"SearchPrefixBoundaries", testSearchPrefixBoundaries},
		{"SearchOrderAndPaging", testSearchOrderAndPaging},
		{"Filters", testFilters},
		{"FilterErrors", testFilterErrors},
		{"FilterInjectionKeys", testFilterInjectionKeys},
		{"TTLExpiryAndRefresh", testTTLExpiryAndRefresh},
		{"TTLDefaults", testTTLDefaults},
		{"TTLSearchAndList", testTTLSearchAndList},
		{"Sweep", testSweep},
		{"ListNamespaces", testListNamespaces},
		{"ListNamespacesEscaping", testListNamespacesEscaping},
		{"VectorSearchRanking", testVectorSearchRanking},
		{"VectorSearchMaxPool", testVectorSearchMaxPool},
		{"VectorsReplacedOnPut", testVectorsReplacedOnPut},
		{"VectorSearchDeepPages", testVectorSearchDeepPages},
		{"VectorSearchTies", testVectorSearchTies},
		{"VectorSearchWithFilter", testVectorSearchWithFilter},
		{"VectorSearchNonASCII", testVectorSearchNonASCII},
		{"VectorSearchErrors", testVectorSearchErrors},
		{"EmbedderCalls", testEmbedderCalls},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

var ctx = context.Background()

// env is one test's store with its clock and embedder.
type env struct {
	t     *testing.T
	s     store.Store
	clock *Clock
	emb   *WordEmbedder
}

func setup(t *testing.T, open Opener, mutate func(*store.Options)) *env {
	t.Helper()
	e := &env{t: t, clock: NewClock(), emb: NewWordEmbedder()}
	opts := store.Options{Now: e.clock.Now, Index: &store.IndexConfig{Embedder: e.emb}}
	if mutate != nil {
		mutate(&opts)
	}
	e.s = open(t, opts)
	return e
}

func (e *env) put(ns []string, key string, value map[string]any) {
	e.t.Helper()
	if err := store.Put(ctx, e.s, ns, key, value); err != nil {
		e.t.Fatalf("put %v/%s: %v", ns, key, err)
	}
}

func (e *env) do(op store.Op) store.Result {
	e.t.Helper()
	r, err := store.Do(ctx, e.s, op)
	if err != nil {
		e.t.Fatalf("%T: %v", op, err)
	}
	return r
}

func (e *env) get(ns []string, key string) *store.Item {
	e.t.Helper()
	it, err := store.Get(ctx, e.s, ns, key)
	if err != nil {
		e.t.Fatalf("get %v/%s: %v", ns, key, err)
	}
	return it
}

func (e *env) search(op store.SearchOp) []store.SearchItem {
	e.t.Helper()
	items, err := store.Search(ctx, e.s, op)
	if err != nil {
		e.t.Fatalf("search %+v: %v", op, err)
	}
	return items
}

func keys(items []store.SearchItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Key
	}
	return out
}

func ptr[T any](v T) *T { return &v }

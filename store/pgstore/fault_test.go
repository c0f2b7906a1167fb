package pgstore_test

import (
	"context"
	"testing"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// The store rides out a dropped connection and a server refusing
// reconnections for a while: a node's put or search during a database
// restart waits for it instead of failing the run.
func TestStoreOutlivesConnectionFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := pgtest.NewProxy(t)
	s, err := pgstore.New(ctx, pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial}), pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, s, []string{"notes"}, "a", map[string]any{"v": 1}); err != nil {
		t.Fatal(err)
	}
	proxy.Refuse(4)
	proxy.Cut()
	if err := store.Put(ctx, s, []string{"notes"}, "a", map[string]any{"v": 2}); err != nil {
		t.Fatalf("put across the fault: %v", err)
	}
	proxy.Refuse(4)
	proxy.Cut()
	it, err := store.Get(ctx, s, []string{"notes"}, "a")
	if err != nil || it == nil || it.Value["v"] != 2.0 {
		t.Fatalf("get across the fault: %+v, %v", it, err)
	}
	proxy.Refuse(4)
	proxy.Cut()
	if items, err := store.Search(ctx, s, store.SearchOp{NamespacePrefix: []string{"notes"}}); err != nil || len(items) != 1 {
		t.Fatalf("search across the fault: %+v, %v", items, err)
	}
	if _, refused := proxy.Counts(); refused < 12 {
		t.Fatalf("the proxy refused %d connections; the faults were not exercised", refused)
	}
}

package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/superstep-dev/superstep/client"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/server"
	"github.com/superstep-dev/superstep/store"
)

func ExampleStoreClient() {
	// A server with a memory store; a real one is started by `superstep`.
	mgr, _ := runs.NewManager(nil)
	defer mgr.Close()
	mem, _ := store.NewMemory(store.Options{})
	api, _ := server.New(server.Config{Runs: mgr, Store: mem})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	ctx := context.Background()
	c, err := client.New(srv.URL)
	if err != nil {
		panic(err)
	}
	ns := []string{"users", "u1"}
	if err := c.Store.PutItem(ctx, ns, "prefs", map[string]any{"theme": "dark"}, nil); err != nil {
		panic(err)
	}
	it, _ := c.Store.GetItem(ctx, ns, "prefs", nil)
	fmt.Println(it.Key, it.Value["theme"])
	missing, _ := c.Store.GetItem(ctx, ns, "nothing", nil)
	fmt.Println(missing == nil)
	items, _ := c.Store.SearchItems(ctx, []string{"users"}, &client.SearchItemsOptions{Filter: map[string]any{"theme": "dark"}})
	fmt.Println(len(items), items[0].Namespace)
	// Output:
	// prefs dark
	// true
	// 1 [users u1]
}

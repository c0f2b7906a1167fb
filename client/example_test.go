package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/client"
	"github.com/superstep-dev/superstep/engine"
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

// ExampleRunsClient runs a graph that asks a question with an interrupt,
// then answers it by the interrupt's id.
func ExampleRunsClient() {
	g := engine.NewStateGraph[approval]()
	g.AddNode("ask", func(ctx context.Context, _ approval) (engine.Output, error) {
		answer, err := engine.Interrupt(ctx, "ship it?")
		if err != nil {
			return nil, err
		}
		return engine.Update{"answer": answer}, nil
	})
	g.AddEdge(engine.Start, "ask").AddEdge("ask", engine.End)
	compiled, _ := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
	mgr, _ := runs.NewManager(map[string]engine.Compiled{"approval": compiled})
	defer mgr.Close()
	api, _ := server.New(server.Config{Runs: mgr})
	defer api.Close()
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	ctx := context.Background()
	c, _ := client.New(srv.URL)
	thread := uuid.NewString()
	res, err := c.Runs.Wait(ctx, thread, "approval", &client.RunCreate{Input: map[string]any{}, IfNotExists: "create"})
	if err != nil {
		panic(err)
	}
	asked := res.Interrupts[0]
	fmt.Println(asked.Value)
	res, err = c.Runs.Wait(ctx, thread, "approval", &client.RunCreate{
		Command: &client.Command{Resume: map[string]any{asked.ID: "yes"}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Values["answer"], len(res.Interrupts))
	// Output:
	// ship it?
	// yes 0
}

type approval struct {
	Answer string `json:"answer"`
}

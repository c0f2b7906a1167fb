// Package client is a typed Go client for the Agent Server HTTP API that
// a Superstep server serves (package server): what a Go service calling
// Superstep, or any LangGraph Agent Server, uses instead of hand-written
// HTTP.
//
//	c, err := client.New("http://localhost:8123", client.WithAPIKey(token))
//	err = c.Store.PutItem(ctx, []string{"users", "u1"}, "prefs", map[string]any{"theme": "dark"}, nil)
//	items, err := c.Store.SearchItems(ctx, []string{"users"}, &client.SearchItemsOptions{Query: "colour scheme"})
//
// # Shape
//
// The client mirrors the official SDKs (@langchain/langgraph-sdk,
// langgraph-sdk): one Client with a sub-client per area (Assistants,
// Threads, Runs, Store), whose methods carry the JS SDK's names in Go
// style (putItem → PutItem, getHistory → GetHistory, joinStream →
// JoinStream). Every method takes a context first, then the path's
// identifiers, then the required values, and last a nil-able options
// struct for everything optional, so a call with defaults reads
// c.Threads.Get(ctx, id) and new options never break callers.
//
// Answers are typed structs with the API's JSON names. A missing item is
// (nil, nil) where the API answers JSON null; a missing thread, run or
// assistant is an error with Status 404.
//
// # Errors
//
// A non-2xx answer is an *Error carrying the status and the server's
// detail ({"detail": ...}); use errors.As. Arguments the API cannot carry
// (a namespace label containing ".", which GET /store/items uses as its
// separator) are refused before anything is sent. The client does not
// retry: the API's writes are not all idempotent, and a Go caller knows
// better than a library which of its calls may be repeated.
//
// # Areas
//
// Besides Ok and Info, the sub-clients carry these methods:
//
//   - Assistants: Get, GetGraph, GetSchemas, GetSubgraphs, Create, Update,
//     Delete, Search (a page with the next offset and the total), Count,
//     GetVersions, SetLatest. An assistant id may also be a graph id.
//   - Threads: Create, Get, Update, Delete, Copy, Search, Count,
//     GetState, UpdateState, PatchState, GetHistory.
//   - Runs: Create, CreateBatch, Stream, Wait, List, Get, Cancel, Join,
//     JoinStream, Delete. An empty thread id calls the stateless /runs
//     routes.
//
// # Runs
//
// Every run-creating method takes a *RunCreate: input or a Command
// (resume, update, goto), config, stream modes, breakpoints, a
// checkpoint to fork from, the multitask strategy and the rest of the
// API's run options. Wait and Join answer a RunResult: the thread's
// values, the interrupts the run stopped at, and the run's and thread's
// ids (from the answer's Content-Location); a run that failed after the
// request was accepted is a *RunError. Answer an interrupt by its id with
// Command{Resume: map[string]any{id: answer}}.
//
// Stream and JoinStream return a *Stream whose events ({Event, Data, ID})
// are read one at a time with Next. A stream created with
// StreamResumable reconnects after a dropped connection with
// Last-Event-ID, so every event arrives once; any other broken
// connection is the stream's Err.
package client

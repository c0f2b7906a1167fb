package engine_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/engine"
)

type fetchState struct {
	URL  string `json:"url"`
	Body string `json:"body"`
}

var errUnavailable = errors.New("503 service unavailable")

// A retried node: it fails twice with a transient error, and the policy
// retries it with exponential backoff (1ms, then 2ms; no jitter so the
// waits are exact). Events show each retry and its wait; engine.Attempt
// tells the node which attempt it is.
func ExampleRetryPolicy() {
	g := engine.NewStateGraph[fetchState]()
	g.AddNode("fetch", func(ctx context.Context, s fetchState) (engine.Output, error) {
		if engine.Attempt(ctx) < 3 {
			return nil, errUnavailable
		}
		return engine.Update{"body": "contents of " + s.URL}, nil
	}, engine.WithRetry(engine.RetryPolicy{
		MaxAttempts:     5,
		InitialInterval: time.Millisecond,
		BackoffFactor:   2,
		RetryOn:         func(err error) bool { return errors.Is(err, errUnavailable) },
	}))
	g.AddEdge(engine.Start, "fetch")
	graph, err := g.Compile(engine.CompileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := &engine.RunOptions{Listener: func(e engine.Event) {
		if r, ok := e.(engine.TaskRetried); ok {
			fmt.Printf("attempt %d failed (%v), retrying in %v\n", r.Attempt, r.Err, r.Backoff)
		}
	}}
	out, err := graph.Invoke(context.Background(), engine.Update{"url": "https://example.com"}, opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Body)
	// Output:
	// attempt 1 failed (503 service unavailable), retrying in 1ms
	// attempt 2 failed (503 service unavailable), retrying in 2ms
	// contents of https://example.com
}

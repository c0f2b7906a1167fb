package flakyservice_test

import (
	"context"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/flakyservice"
)

func ExampleNew() {
	g, err := flakyservice.New(flakyservice.Options{
		API:   flakyservice.NewFlakyAPI(2),
		Retry: &engine.RetryPolicy{InitialInterval: time.Millisecond, BackoffFactor: 2, MaxAttempts: 4},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	opts := &engine.RunOptions{Listener: func(e engine.Event) {
		if r, ok := e.(engine.TaskRetried); ok {
			fmt.Printf("attempt %d: %v; retrying in %v\n", r.Attempt, r.Err, r.Backoff)
		}
	}}
	out, err := g.Invoke(context.Background(), flakyservice.Input("in_1002"), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s is %s (fetched on attempt %d)\n", out.Invoice.ID, out.Status, out.Attempts)
	// Output:
	// attempt 1: fetch invoice (attempt 1): payment provider answered 503 Service Unavailable; retrying in 1ms
	// attempt 2: fetch invoice (attempt 2): payment provider answered 503 Service Unavailable; retrying in 2ms
	// in_1002 is outstanding (fetched on attempt 3)
}

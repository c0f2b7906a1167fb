package cachedlookup_test

import (
	"context"
	"fmt"
	"time"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cachedlookup"
)

func ExampleNew() {
	now := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	g, err := cachedlookup.New(cachedlookup.Options{Now: func() time.Time { return now }})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, amount := range []float64{100, 250} {
		cached := false
		opts := &engine.RunOptions{Listener: func(e engine.Event) {
			if f, ok := e.(engine.TaskFinished); ok && f.Task.Name == cachedlookup.NodeLookupRate {
				cached = f.Cached
			}
		}}
		out, err := g.Invoke(context.Background(), cachedlookup.Input("EUR/USD", amount), opts)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%.2f EUR = %.2f USD (rate from %s, cached: %v)\n", amount, out.Converted, out.FetchedAt.Format(time.TimeOnly), cached)
		now = now.Add(5 * time.Second)
	}
	// Output:
	// 100.00 EUR = 108.42 USD (rate from 09:00:00, cached: false)
	// 250.00 EUR = 271.05 USD (rate from 09:00:00, cached: true)
}

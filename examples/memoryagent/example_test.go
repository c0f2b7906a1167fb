package memoryagent_test

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/examples/memoryagent"
)

func ExampleNew() {
	ctx := context.Background()
	g, err := memoryagent.New(memoryagent.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := g.Invoke(ctx, memoryagent.Remember("ana", "I drive a blue electric car.", "I work as a nurse on night shifts."), nil); err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(ctx, memoryagent.Ask("ana", "What kind of vehicle do I own?"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Answer)
	// Output:
	// You told me: I drive a blue electric car.
}

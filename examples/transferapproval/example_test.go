package transferapproval_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/transferapproval"
)

func ExampleNew() {
	ctx := context.Background()
	g, err := transferapproval.New(transferapproval.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		fmt.Println(err)
		return
	}
	thread := &engine.RunOptions{ThreadID: "request-42"}
	_, err = g.Invoke(ctx, transferapproval.Input("Please send 1,500 to Alice Martin for the March invoice."), thread)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) {
		fmt.Println("no review:", err)
		return
	}
	q := intr.Interrupts[0].Value.(transferapproval.Question)
	fmt.Println(q.Question)

	lower := 900.0
	out, err := g.Invoke(ctx, engine.Command{Resume: transferapproval.Answer{Action: transferapproval.ActionEdit, Amount: &lower}}, thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %.2f to %s (%s, requested %.2f)\n", out.Status, out.Amount, out.Recipient, out.Reference, out.Requested)
	// Output:
	// Pay 1500.00 to Alice Martin? It is over the 1000.00 limit that is paid without review.
	// executed: 900.00 to Alice Martin (TX-0001, requested 1500.00)
}

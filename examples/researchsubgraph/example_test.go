package researchsubgraph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/researchsubgraph"
)

func ExampleNew() {
	ctx := context.Background()
	g, err := researchsubgraph.New(researchsubgraph.Options{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		fmt.Println(err)
		return
	}
	thread := &engine.RunOptions{ThreadID: "storage-choice"}
	_, err = g.Invoke(ctx, researchsubgraph.Input("Compare Postgres and SQLite for a multi-user web app"), thread)
	var intr *engine.Interrupted
	if !errors.As(err, &intr) {
		fmt.Println("no review:", err)
		return
	}
	review := intr.Interrupts[0].Value.(researchsubgraph.Review)
	fmt.Printf("%s asks about %d findings\n", intr.Interrupts[0].Node, len(review.Findings))

	out, err := g.Invoke(ctx, engine.Command{Resume: "yes"}, thread)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Sources)
	// Output:
	// review asks about 4 findings
	// [pg-mvcc pg-ops sqlite-wal sqlite-embed]
}

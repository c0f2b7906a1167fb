package mapreduce_test

import (
	"context"
	"fmt"

	"github.com/superstep-dev/superstep/examples/mapreduce"
)

func ExampleNew() {
	g, err := mapreduce.New(mapreduce.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	doc := "## Plan\nShip on Friday. Then rest.\n## Risks\nThe vendor may slip. We have a fallback.\n"
	out, err := g.Invoke(context.Background(), mapreduce.Input(doc), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(out.Digest)
	// Output:
	// - Plan: Ship on Friday.
	// - Risks: The vendor may slip.
}

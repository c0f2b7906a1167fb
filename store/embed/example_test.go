package embed_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/superstep-dev/superstep/store/embed"
)

// Rank two documents for a query that shares no content words with
// either: the offline embedder still prefers the one about the same thing.
func ExampleOffline() {
	e := embed.Offline()
	docs := []string{
		"Simmer the tomato sauce with garlic and basil.",
		"The central bank raised interest rates to fight inflation.",
	}
	vecs, err := e.Embed(context.Background(), append([]string{"monetary policy tightening"}, docs...))
	if err != nil {
		fmt.Println(err)
		return
	}
	query, docVecs := vecs[0], vecs[1:]
	order := []int{0, 1}
	sort.Slice(order, func(i, j int) bool {
		return cosine(query, docVecs[order[i]]) > cosine(query, docVecs[order[j]])
	})
	fmt.Println(e.Name(), e.Dim())
	for rank, i := range order {
		fmt.Printf("%d. %s\n", rank+1, docs[i])
	}
	// Output:
	// glove100d-sif 100
	// 1. The central bank raised interest rates to fight inflation.
	// 2. Simmer the tomato sauce with garlic and basil.
}

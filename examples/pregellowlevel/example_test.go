package pregellowlevel_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/superstep-dev/superstep/examples/pregellowlevel"
)

func ExampleNew() {
	p, err := pregellowlevel.New(pregellowlevel.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Invoke(context.Background(), 123, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(out) // map keys come out sorted
	fmt.Println(string(b))
	// Output:
	// {"bar":456,"baz":579,"foo":"123"}
}

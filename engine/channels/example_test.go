package channels_test

import (
	"fmt"

	"github.com/superstep-dev/superstep/engine/channels"
)

// A state key declared with an append reducer: writes of one step are
// folded in order, and an Overwrite replaces the list instead.
func ExampleBinaryOperator_overwrite() {
	messages := channels.BinaryOperatorOf[[]string](channels.AppendReducer)

	// Step 1: two tasks write; the barrier's order decides the result.
	if _, err := messages.Update([]any{"hello", []string{"how", "are you"}}); err != nil {
		fmt.Println(err)
	}
	v, _ := messages.Get()
	fmt.Println(v)

	// Step 2: one task overwrites the history, a later one appends; the
	// value written after the Overwrite in the same step is ignored.
	if _, err := messages.Update([]any{channels.Overwrite{Value: []string{"summary"}}, "ignored"}); err != nil {
		fmt.Println(err)
	}
	v, _ = messages.Get()
	fmt.Println(v)

	// Step 3: the JSON form, as a client or the Studio sends it.
	if _, err := messages.Update([]any{map[string]any{"__overwrite__": []any{"fresh"}}}); err != nil {
		fmt.Println(err)
	}
	saved, _, _ := messages.Checkpoint()
	fmt.Println(string(saved))

	// Two overwrites in one step are refused.
	_, err := messages.Update([]any{channels.Overwrite{Value: []string{"a"}}, channels.Overwrite{Value: []string{"b"}}})
	fmt.Println(err)
	// Output:
	// [hello how are you]
	// [summary]
	// ["fresh"]
	// invalid update: can receive only one Overwrite value per superstep; make sure a single task overwrites this key in a step
}

// A key without a reducer takes one write per step.
func ExampleLastValue() {
	answer := channels.LastValueOf[int]()
	_, _ = answer.Update([]any{41.0}) // a JSON number: converted, since it is whole
	v, _ := answer.Get()
	fmt.Printf("%v (%T)\n", v, v)

	_, err := answer.Update([]any{1, 2})
	fmt.Printf("at key %q: %v\n", "answer", err)
	// Output:
	// 41 (int)
	// at key "answer": invalid update: can receive only one value per step, got 2; declare a reducer for this key to combine concurrent writes
}

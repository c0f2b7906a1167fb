package channels_test

import (
	"encoding/json"
	"testing"

	"github.com/superstep-dev/superstep/engine/channels"
)

// An Overwrite encodes as upstream's {"__overwrite__": x} (what a stream
// or API client sees), and that form, written to a reducer channel,
// overwrites again.
func TestOverwriteJSONIsUpstreamsForm(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(channels.Overwrite{Value: []string{"b"}})
	if err != nil || string(b) != `{"__overwrite__":["b"]}` {
		t.Fatalf("Overwrite encodes as %s, %v; want {\"__overwrite__\":[\"b\"]}", b, err)
	}
	var back any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	ch := channels.NewBinaryOperator(nil, func(a, b any) (any, error) {
		return append(a.([]any), b.([]any)...), nil
	})
	if _, err := ch.Update([]any{[]any{"a"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Update([]any{back}); err != nil {
		t.Fatal(err)
	}
	if v, _ := ch.Get(); len(v.([]any)) != 1 || v.([]any)[0] != "b" {
		t.Fatalf("after the decoded overwrite the channel holds %v, want [b]", v)
	}
}

package channels_test

import (
	"reflect"
	"testing"

	"github.com/superstep-dev/superstep/engine/channels"
)

// A kind that says an unwritten step never changes it must keep its value
// through Update(nil); the loop relies on it to skip such channels.
func TestChangesWhenUnwrittenMatchesUpdate(t *testing.T) {
	t.Parallel()
	str := reflect.TypeFor[string]()
	cases := []struct {
		name  string
		ch    channels.Channel
		write any
		want  bool
	}{
		{"LastValue", channels.NewLastValue(str), "x", false},
		{"LastValueAfterFinish", channels.NewLastValueAfterFinish(str), "x", false},
		{"BinaryOperator", channels.NewBinaryOperator(reflect.TypeFor[[]string](), channels.AppendReducer), "x", false},
		{"NamedBarrierValue", channels.NewNamedBarrierValue([]string{"a", "b"}), "a", false},
		{"NamedBarrierValueAfterFinish", channels.NewNamedBarrierValueAfterFinish([]string{"a", "b"}), "a", false},
		{"UntrackedValue", channels.NewUntrackedValue(str, true), "x", false},
		{"EphemeralValue", channels.NewEphemeralValue(str, true), "x", true},
		{"AnyValue", channels.NewAnyValue(str), "x", true},
		{"Topic", channels.NewTopic(str, false), "x", true},
		{"Topic accumulating", channels.NewTopic(str, true), "x", false},
	}
	for _, c := range cases {
		u, ok := c.ch.(channels.Unwritten)
		if !ok {
			t.Errorf("%s does not implement Unwritten", c.name)
			continue
		}
		if got := u.ChangesWhenUnwritten(); got != c.want {
			t.Errorf("%s: ChangesWhenUnwritten = %v, want %v", c.name, got, c.want)
		}
		if _, err := c.ch.Update([]any{c.write}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		changed, err := c.ch.Update(nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if changed && !u.ChangesWhenUnwritten() {
			t.Errorf("%s changed on Update(nil) but says it never does", c.name)
		}
	}
}

package channels

import (
	"fmt"
	"testing"
)

// The superstep budget (≤10 allocations for a one-node counter loop) leaves
// nothing for channels: the hot paths must not allocate at all.
//
// This is the one test that does not call t.Parallel: testing.AllocsPerRun
// counts process-wide allocations and refuses to run during parallel tests.
func TestHotPathsDoNotAllocate(t *testing.T) {
	one := []any{7}
	cases := []struct {
		name string
		run  func() error
	}{
		{name: "LastValue one value", run: func() error {
			_, err := lastValueForAllocs.Update(one)
			return err
		}},
		{name: "BinaryOperator adds nothing to its reducer", run: func() error {
			_, err := binopForAllocs.Update(one)
			return err
		}},
		{name: "non-accumulating Topic, write then clear", run: func() error {
			if _, err := topicForAllocs.Update(one); err != nil {
				return err
			}
			_, err := topicForAllocs.Update(nil)
			return err
		}},
		{name: "untouched channels: Update(nil), Consume, Finish", run: func() error {
			for _, ch := range untouchedForAllocs {
				if _, err := ch.Update(nil); err != nil {
					return fmt.Errorf("%T: %w", ch, err)
				}
				ch.Consume()
				ch.Finish()
			}
			return nil
		}},
		{name: "Get", run: func() error {
			for _, ch := range untouchedForAllocs {
				ch.Get()
			}
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err != nil { // warm up: grow buffers once
				t.Fatal(err)
			}
			var err error
			if n := testing.AllocsPerRun(100, func() { err = tc.run() }); n != 0 {
				t.Errorf("%v allocations per run, want 0", n)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

var (
	lastValueForAllocs = LastValueOf[int]()
	binopForAllocs     = BinaryOperatorOf[int](func(current, next any) (any, error) { return preboxed, nil })
	preboxed           = any(1000)
	topicForAllocs     = TopicOf[int](false)
	untouchedForAllocs = allKinds()
)

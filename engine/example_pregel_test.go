package engine_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
)

// The low-level API: channels and nodes wired by hand. "double" reads the
// input channel raw (SubscribeOnly); "report" triggers on doubled and also
// reads the input, so its input is a map of both; a Topic collects what
// both nodes publish to the log.
func ExampleNewPregel() {
	double, err := engine.NewNode().
		SubscribeOnly("input").
		Do(func(_ context.Context, in any) (any, error) { return in.(int) * 2, nil }).
		WriteTo("doubled", engine.WriteEntry{Channel: "log", Mapper: func(v any) (any, error) {
			return fmt.Sprintf("doubled to %v", v), nil
		}}).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	double.Name = "double"
	report, err := engine.NewNode().
		SubscribeTo(true, "doubled").
		ReadFrom("input").
		Do(func(_ context.Context, in any) (any, error) {
			m := in.(map[string]any)
			return fmt.Sprintf("%v*2 = %v", m["input"], m["doubled"]), nil
		}).
		WriteTo("output", "log").
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	report.Name = "report"
	p, err := engine.NewPregel(engine.PregelConfig{
		Channels: map[string]channels.Channel{
			"input":   channels.NewLastValue(reflect.TypeFor[int]()),
			"doubled": channels.NewLastValue(reflect.TypeFor[int]()),
			"output":  channels.NewLastValue(reflect.TypeFor[string]()),
			"log":     channels.NewTopic(reflect.TypeFor[string](), true),
		},
		Nodes:          []*engine.Node{double, report},
		InputChannels:  []string{"input"},
		OutputChannels: []string{"output", "log"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := p.Invoke(context.Background(), 21, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := out.(map[string]any)
	fmt.Println(m["output"])
	for _, line := range m["log"].([]string) {
		fmt.Println("log:", line)
	}
	// Output:
	// 21*2 = 42
	// log: doubled to 42
	// log: 21*2 = 42
}

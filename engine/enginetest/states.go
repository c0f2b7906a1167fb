package enginetest

import (
	"context"

	"github.com/superstep-dev/superstep/engine"
)

// The state types of the scenarios. A Go StateGraph's state is a struct,
// so upstream's root-value states (Annotated[int, add]) become a struct
// with one field.

// addState is upstream's `value: Annotated[int, operator.add]`.
type addState struct {
	Value int `json:"value" reduce:"add"`
}

// logState is upstream's `value: Annotated[list, operator.add]`.
type logState struct {
	Log []string `json:"log" reduce:"append"`
}

func logNode(name string) func(context.Context, logState) (engine.Output, error) {
	return func(context.Context, logState) (engine.Output, error) {
		return engine.Update{"log": name}, nil
	}
}

// strState is upstream's `my_key: Annotated[str, operator.add]`.
type strState struct {
	MyKey string `json:"my_key" reduce:"add"`
}

type ageState struct {
	Age int `json:"age"`
}

type pairState struct {
	A string `json:"a"`
	B string `json:"b"`
}

type routeState struct {
	V string `json:"v"`
}

type counter struct {
	N int `json:"n"`
}

// itemsState stands in for upstream's root state Annotated[list, add].
type itemsState struct {
	Items []string `json:"items" reduce:"append"`
}

func appendName(name string) func(context.Context, itemsState) (engine.Output, error) {
	return func(context.Context, itemsState) (engine.Output, error) {
		return engine.Update{"items": name}, nil
	}
}

package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ParseToolCall reads a finished tool call as a provider returned it:
// arguments that are one JSON object (numbers kept as json.Number; empty
// is {}) make a ToolCall, anything else an InvalidToolCall keeping the
// arguments as they were written, so the model can be told what was
// wrong. Providers use it for whole replies and for the end of a stream
// alike, so both give the same message.
func ParseToolCall(id, name, args string) (*ToolCall, *InvalidToolCall) {
	if strings.TrimSpace(args) == "" {
		return &ToolCall{ID: id, Name: name, Args: map[string]any{}}, nil
	}
	if !json.Valid([]byte(args)) {
		return nil, &InvalidToolCall{ID: id, Name: name, Args: args, Error: fmt.Sprintf("Function %s arguments are not valid JSON: %s", name, abbreviate([]byte(args)))}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &InvalidToolCall{ID: id, Name: name, Args: args, Error: fmt.Sprintf("Function %s arguments are not valid JSON: %v", name, err)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &InvalidToolCall{ID: id, Name: name, Args: args, Error: fmt.Sprintf("Function %s arguments are not a JSON object: %s", name, abbreviate([]byte(args)))}
	}
	return &ToolCall{ID: id, Name: name, Args: obj}, nil
}

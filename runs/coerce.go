package runs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// coerceInput converts JSON-decoded input values ([]any, float64,
// map[string]any) into the Go types of the state's fields, found by json
// name on the graph's zero state: the engine checks types strictly, and a
// form's JSON never carries Go types. Keys that are not fields are left
// alone for the engine to reject with its own message.
func coerceInput(zero any, input map[string]any) (map[string]any, error) {
	fields := stateFields(zero)
	if fields == nil {
		return input, nil
	}
	out := make(map[string]any, len(input))
	keys := make([]string, 0, len(input))
	for k := range input {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := input[k]
		typ, ok := fields[k]
		if !ok || v == nil {
			out[k] = v
			continue
		}
		if reflect.TypeOf(v).AssignableTo(typ) {
			out[k] = v
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: key %q: %v", ErrInvalidInput, k, err)
		}
		p := reflect.New(typ)
		if err := json.Unmarshal(b, p.Interface()); err != nil {
			// A reducer key may take one element of its list type.
			if typ.Kind() == reflect.Slice {
				e := reflect.New(typ.Elem())
				if json.Unmarshal(b, e.Interface()) == nil {
					out[k] = e.Elem().Interface()
					continue
				}
			}
			return nil, fmt.Errorf("%w: key %q wants %s, got %s", ErrInvalidInput, k, typ, jsonKind(v))
		}
		out[k] = p.Elem().Interface()
	}
	return out, nil
}

// stateFields maps the json names of a struct's fields to their types.
func stateFields(zero any) map[string]reflect.Type {
	t := reflect.TypeOf(zero)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" {
				continue
			}
			if n != "" {
				name = n
			}
		}
		out[name] = f.Type
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

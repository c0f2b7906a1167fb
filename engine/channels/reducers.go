package channels

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// AppendReducer appends to a slice: next is either one element or a slice
// of the channel's slice type, whose elements are all appended. A []any
// from JSON is appended element by element, each converted like a channel
// write (so float64 becomes int for a []int). Anything else is an error
// wrapping ErrInvalidUpdate that names both types.
//
// For a []any channel, a []any is a slice of the channel's type and is
// concatenated, while any other value, including a slice of another type,
// is appended as one element.
//
// It appends in place when the slice has spare capacity, which is what
// keeps a growing list linear; BinaryOperator makes that safe by handing
// out only capacity-clipped slices.
func AppendReducer(current, next any) (any, error) {
	switch cur := current.(type) {
	case []any:
		if n, ok := next.([]any); ok {
			return append(cur, n...), nil
		}
		return append(cur, next), nil
	case []string:
		if out, ok := appendFast(cur, next); ok {
			return out, nil
		}
	case []int:
		if out, ok := appendFast(cur, next); ok {
			return out, nil
		}
	case []float64:
		if out, ok := appendFast(cur, next); ok {
			return out, nil
		}
	case []map[string]any:
		if out, ok := appendFast(cur, next); ok {
			return out, nil
		}
	}
	return appendReflect(current, next)
}

// appendAll folds values into current as AppendReducer would, one after
// another, but growing the slice once. It reports false (and the caller
// folds one by one) for types it does not handle and for Overwrites.
func appendAll(current any, values []any) (any, bool) {
	switch cur := current.(type) {
	case []string:
		return appendBatch(cur, values)
	case []int:
		return appendBatch(cur, values)
	case []float64:
		return appendBatch(cur, values)
	case []map[string]any:
		return appendBatch(cur, values)
	}
	return nil, false
}

func appendBatch[T any](cur []T, values []any) (any, bool) {
	extra := 0
	for _, v := range values {
		switch x := v.(type) {
		case T:
			extra++
		case []T:
			extra += len(x)
		default:
			return nil, false
		}
	}
	out := slices.Grow(cur, extra)
	for _, v := range values {
		switch x := v.(type) {
		case T:
			out = append(out, x)
		case []T:
			out = append(out, x...)
		}
	}
	return out, true
}

// appendFast handles the common element types without reflect.
func appendFast[T any](cur []T, next any) (any, bool) {
	switch n := next.(type) {
	case []T:
		return append(cur, n...), true
	case T:
		return append(cur, n), true
	}
	return nil, false
}

func appendReflect(current, next any) (any, error) {
	cv := reflect.ValueOf(current)
	if cv.Kind() != reflect.Slice {
		return nil, fmt.Errorf("%w: AppendReducer needs a slice, but the current value has type %T", ErrInvalidUpdate, current)
	}
	st := cv.Type()
	et := st.Elem()
	if next == nil {
		v, err := convertTo(et, nil)
		if err != nil {
			return nil, err
		}
		return appendOne(cv, et, v).Interface(), nil
	}
	nt := reflect.TypeOf(next)
	switch {
	case nt == st:
		return reflect.AppendSlice(cv, reflect.ValueOf(next)).Interface(), nil
	case nt.AssignableTo(et):
		return appendOne(cv, et, next).Interface(), nil
	case nt.Kind() == reflect.Slice:
		nv := reflect.ValueOf(next)
		out := cv
		for i := range nv.Len() {
			v, err := convertTo(et, nv.Index(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("AppendReducer: element %d of the %s written: %w", i, nt, err)
			}
			out = appendOne(out, et, v)
		}
		return out.Interface(), nil
	}
	v, err := convertTo(et, next)
	if err != nil {
		if isJSONNumber(next) {
			return nil, fmt.Errorf("AppendReducer: %w", err)
		}
		return nil, fmt.Errorf("%w: AppendReducer cannot append a value of type %s to a %s; write one %s or a %s",
			ErrInvalidUpdate, nt, st, et, st)
	}
	return appendOne(cv, et, v).Interface(), nil
}

// appendOne appends v (already of a type assignable to et, or nil) to s.
func appendOne(s reflect.Value, et reflect.Type, v any) reflect.Value {
	if v == nil {
		return reflect.Append(s, reflect.Zero(et))
	}
	return reflect.Append(s, reflect.ValueOf(v))
}

// AddReducer adds numbers and concatenates strings: the reducer of a
// counter or a running total. next must have the current value's type,
// except that a JSON number is converted when it fits exactly (3.0 to an
// int counter, not 3.5). Integer overflow wraps, as Go arithmetic does.
func AddReducer(current, next any) (any, error) {
	switch cur := current.(type) {
	case int:
		if n, ok := next.(int); ok {
			return cur + n, nil
		}
	case int64:
		if n, ok := next.(int64); ok {
			return cur + n, nil
		}
	case float64:
		if n, ok := next.(float64); ok {
			return cur + n, nil
		}
	case string:
		if n, ok := next.(string); ok {
			return cur + n, nil
		}
	}
	return addReflect(current, next)
}

func addReflect(current, next any) (any, error) {
	cv := reflect.ValueOf(current)
	if !cv.IsValid() || !isAddable(cv.Kind()) {
		return nil, fmt.Errorf("%w: AddReducer works on numbers and strings, but the current value has type %T", ErrInvalidUpdate, current)
	}
	t := cv.Type()
	if next == nil {
		return nil, fmt.Errorf("%w: AddReducer cannot add nil to a %s", ErrInvalidUpdate, t)
	}
	n, err := convertTo(t, next)
	if err != nil {
		if isJSONNumber(next) {
			return nil, fmt.Errorf("AddReducer: %w", err)
		}
		return nil, fmt.Errorf("%w: AddReducer cannot add a value of type %T to a %s", ErrInvalidUpdate, next, t)
	}
	nv := reflect.ValueOf(n)
	out := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out.SetInt(cv.Int() + nv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		out.SetUint(cv.Uint() + nv.Uint())
	case reflect.Float32, reflect.Float64:
		out.SetFloat(cv.Float() + nv.Float())
	case reflect.Complex64, reflect.Complex128:
		out.SetComplex(cv.Complex() + nv.Complex())
	case reflect.String:
		out.SetString(cv.String() + nv.String())
	}
	return out.Interface(), nil
}

// isJSONNumber reports whether v is a number as JSON decoding produces it;
// the conversion error then says more than a type mismatch would.
func isJSONNumber(v any) bool {
	switch v.(type) {
	case float64, json.Number:
		return true
	}
	return false
}

func isAddable(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	}
	return false
}

package channels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/superstep-dev/superstep/internal/jsonfast"
)

var anyType = reflect.TypeFor[any]()

// valueType is the Go type a channel holds, with what the hot path needs
// precomputed. It is immutable and shared by a channel and its copies.
type valueType struct {
	typ reflect.Type
	// acceptAll is true for the empty interface: every value fits as is.
	acceptAll bool
	// zero is what an untyped nil write becomes: the boxed zero value of
	// typ, so that Get always returns a value of typ.
	zero any
	// slice is true when typ is a slice type: Get and Copy hand out
	// capacity-clipped slices (see clipSlice).
	slice bool
	// viaPtr is true when only *typ implements json.Marshaler: encoding
	// must then go through a pointer (see encode).
	viaPtr bool
}

// newValueType caches typ's properties; a nil typ means any.
func newValueType(typ reflect.Type) *valueType {
	if typ == nil {
		typ = anyType
	}
	vt := &valueType{typ: typ, slice: typ.Kind() == reflect.Slice}
	if typ.Kind() == reflect.Interface {
		vt.acceptAll = typ.NumMethod() == 0
	} else {
		vt.zero = reflect.Zero(typ).Interface()
		vt.viaPtr = !typ.Implements(jsonMarshaler) && reflect.PointerTo(typ).Implements(jsonMarshaler)
	}
	return vt
}

// check returns v as a value of the channel's type, or an error wrapping
// ErrInvalidUpdate that names both types. The common case (v already has
// exactly the channel's type) costs a type-word comparison and allocates
// nothing.
func (vt *valueType) check(v any) (any, error) {
	if vt.acceptAll {
		if ov, ok := v.(Overwrite); ok {
			return ov.Value, nil
		}
		return v, nil
	}
	if v == nil {
		return vt.zero, nil
	}
	if reflect.TypeOf(v) == vt.typ {
		return v, nil
	}
	return convertTo(vt.typ, v)
}

// checkAll checks every value written in a step, so that a wrong write is
// reported even when a later one wins, and returns the last one.
func (vt *valueType) checkAll(values []any) (any, error) {
	var last any
	for _, v := range values {
		checked, err := vt.check(v)
		if err != nil {
			return nil, err
		}
		last = checked
	}
	return last, nil
}

// convertTo is the slow path of check, also used by the reducers: it
// accepts values assignable to typ, and the untyped shapes that JSON
// decoding produces (float64 and json.Number for any numeric kind when the
// number fits exactly, string and bool for named string and bool types,
// []any and map[string]any for composite types). An Overwrite written to a
// channel without a reducer simply sets its value.
func convertTo(typ reflect.Type, v any) (any, error) {
	if v == nil {
		if typ.Kind() == reflect.Interface {
			return nil, nil
		}
		return reflect.Zero(typ).Interface(), nil
	}
	t := reflect.TypeOf(v)
	if t == typ {
		return v, nil
	}
	if t.AssignableTo(typ) {
		if typ.Kind() == reflect.Interface {
			return v, nil
		}
		// Same underlying type, one side unnamed: convert so that the
		// channel only ever holds values of exactly typ.
		return reflect.ValueOf(v).Convert(typ).Interface(), nil
	}
	switch x := v.(type) {
	case Overwrite:
		return convertTo(typ, x.Value)
	case float64:
		return convertNumber(typ, x, "", t)
	case json.Number:
		return convertNumber(typ, 0, string(x), t)
	case string:
		if typ.Kind() == reflect.String {
			return reflect.ValueOf(x).Convert(typ).Interface(), nil
		}
	case bool:
		if typ.Kind() == reflect.Bool {
			return reflect.ValueOf(x).Convert(typ).Interface(), nil
		}
	case []any, map[string]any:
		return convertJSONShape(typ, v, t)
	}
	return nil, typeMismatch(t, typ)
}

func typeMismatch(got, want reflect.Type) error {
	return fmt.Errorf("%w: got a value of type %s, but the channel holds %s", ErrInvalidUpdate, got, want)
}

// convertNumber converts a JSON number (a float64, or the text of a
// json.Number when text is not empty) to a numeric typ, refusing values
// that would change: fractions for integer kinds, overflow, negative
// unsigned.
func convertNumber(typ reflect.Type, f float64, text string, got reflect.Type) (any, error) {
	out := reflect.New(typ).Elem()
	shown := text
	if text == "" {
		shown = strconv.FormatFloat(f, 'g', -1, 64)
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: %s (%s) %s, so it does not fit the channel's type %s", ErrInvalidUpdate, shown, got, why, typ)
	}
	switch typ.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if text != "" {
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return nil, bad("is not a whole number in range")
			}
			i = n
		} else {
			if f != math.Trunc(f) || math.IsInf(f, 0) {
				return nil, bad("is not a whole number")
			}
			if f < -(1<<63) || f >= 1<<63 {
				return nil, bad("is out of range")
			}
			i = int64(f)
		}
		if out.OverflowInt(i) {
			return nil, bad("is out of range")
		}
		out.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		var u uint64
		if text != "" {
			n, err := strconv.ParseUint(text, 10, 64)
			if err != nil {
				return nil, bad("is not a non-negative whole number in range")
			}
			u = n
		} else {
			if f != math.Trunc(f) || math.IsInf(f, 0) || f < 0 {
				return nil, bad("is not a non-negative whole number")
			}
			if f >= 1<<64 {
				return nil, bad("is out of range")
			}
			u = uint64(f)
		}
		if out.OverflowUint(u) {
			return nil, bad("is out of range")
		}
		out.SetUint(u)
	case reflect.Float32, reflect.Float64:
		if text != "" {
			n, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return nil, bad("is not a number")
			}
			f = n
		}
		if out.OverflowFloat(f) {
			return nil, bad("is out of range")
		}
		out.SetFloat(f)
	default:
		return nil, typeMismatch(got, typ)
	}
	return out.Interface(), nil
}

// convertJSONShape turns a JSON-decoded composite ([]any, map[string]any)
// into typ by re-decoding it, strictly: unknown struct fields are errors.
func convertJSONShape(typ reflect.Type, v any, got reflect.Type) (any, error) {
	switch typ.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.Struct, reflect.Pointer:
	default:
		return nil, typeMismatch(got, typ)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: got a value of type %s that cannot be converted to the channel's type %s: %v",
			ErrInvalidUpdate, got, typ, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	out := reflect.New(typ)
	if err := dec.Decode(out.Interface()); err != nil {
		return nil, fmt.Errorf("%w: got a value of type %s that does not fit the channel's type %s: %v",
			ErrInvalidUpdate, got, typ, err)
	}
	return out.Elem().Interface(), nil
}

// decodeValue decodes saved JSON into a value of exactly vt's type, so a
// restored int is an int and not a float64.
func decodeValue(vt *valueType, data json.RawMessage) (any, error) {
	out := reflect.New(vt.typ)
	if err := json.Unmarshal(data, out.Interface()); err != nil {
		return nil, fmt.Errorf("%w: decoding a value of type %s: %v", ErrInvalidCheckpoint, vt.typ, err)
	}
	return out.Elem().Interface(), nil
}

// encode encodes a value of vt's type for a checkpoint. It encodes through
// a pointer so that a MarshalJSON method with a pointer receiver is used,
// exactly as decodeValue uses a pointer-receiver UnmarshalJSON: what is
// saved is what will be restored.
func (vt *valueType) encode(v any) (json.RawMessage, error) {
	if v != nil && vt.typ.Kind() != reflect.Interface && vt.ptrMarshaler() {
		p := reflect.New(vt.typ)
		p.Elem().Set(reflect.ValueOf(v))
		v = p.Interface()
	}
	data, err := jsonfast.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding a channel value of type %s: %w", vt.typ, err)
	}
	return data, nil
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

// ptrMarshaler reports whether only *T (not T) implements json.Marshaler,
// the one case where encoding must go through a pointer. Other types are
// encoded directly, which saves allocations on every checkpoint.
func (vt *valueType) ptrMarshaler() bool { return vt.viaPtr }

// clipSlice returns v with its capacity cut to its length when v is a slice
// with spare capacity, so that appending to the result always reallocates.
// Reducers such as AppendReducer append in place into a channel's spare
// capacity; clipping what Get and Copy hand out keeps that invisible.
// Non-slices are returned as they are.
func clipSlice(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		if len(x) == cap(x) {
			return v
		}
		return x[:len(x):len(x)]
	case []string:
		if len(x) == cap(x) {
			return v
		}
		return x[:len(x):len(x)]
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Len() == rv.Cap() {
		return v
	}
	return rv.Slice3(0, rv.Len(), rv.Len()).Interface()
}

// isAbsent reports whether there is no saved data at all (nil or blank):
// FromCheckpoint then returns an empty channel. JSON null is data: a
// channel can hold nil.
func isAbsent(data json.RawMessage) bool {
	return len(bytes.TrimSpace(data)) == 0
}

// isNull reports whether saved data is absent or JSON null; for list-like
// saved forms both mean empty.
func isNull(data json.RawMessage) bool {
	d := bytes.TrimSpace(data)
	return len(d) == 0 || bytes.Equal(d, []byte("null"))
}

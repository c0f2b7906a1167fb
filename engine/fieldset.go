package engine

import (
	"fmt"
	"reflect"
	"unsafe"
)

// Building the typed state is on every superstep's path (the state shared
// by the step's nodes, and each router's view of it), so fields are set
// without reflect.Value when a value's dynamic type is exactly the field's
// type and the type's memory layout is known: numbers, bools, strings,
// slices, maps, pointers, channels, functions and empty interfaces. Other
// types (structs, arrays, non-empty interfaces) and values that need a
// conversion go through reflect.

// fieldSetter stores x, whose dynamic type is exactly the field's type, at
// the field's address p.
type fieldSetter func(p unsafe.Pointer, x any)

// efaceData is the data word of an interface value: a pointer to the
// value, or for pointer-shaped types the value itself.
func efaceData(x *any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(x))[1]
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// setterFor returns the fast setter for fields of type t, or nil.
func setterFor(t reflect.Type) fieldSetter {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		switch t.Size() {
		case 1:
			return func(p unsafe.Pointer, x any) { *(*uint8)(p) = *(*uint8)(efaceData(&x)) }
		case 2:
			return func(p unsafe.Pointer, x any) { *(*uint16)(p) = *(*uint16)(efaceData(&x)) }
		case 4:
			return func(p unsafe.Pointer, x any) { *(*uint32)(p) = *(*uint32)(efaceData(&x)) }
		case 8:
			if t.Align() < 8 {
				// complex64 (and 64-bit numbers on 32-bit platforms)
				// may sit at a 4-aligned offset.
				return func(p unsafe.Pointer, x any) { *(*[2]uint32)(p) = *(*[2]uint32)(efaceData(&x)) }
			}
			return func(p unsafe.Pointer, x any) { *(*uint64)(p) = *(*uint64)(efaceData(&x)) }
		case 16:
			return func(p unsafe.Pointer, x any) { *(*[2]uint64)(p) = *(*[2]uint64)(efaceData(&x)) }
		}
	case reflect.String:
		return func(p unsafe.Pointer, x any) { *(*string)(p) = *(*string)(efaceData(&x)) }
	case reflect.Slice:
		return func(p unsafe.Pointer, x any) { *(*sliceHeader)(p) = *(*sliceHeader)(efaceData(&x)) }
	case reflect.Map, reflect.Pointer, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		// Pointer-shaped: the interface's data word is the value.
		return func(p unsafe.Pointer, x any) { *(*unsafe.Pointer)(p) = efaceData(&x) }
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return func(p unsafe.Pointer, x any) { *(*any)(p) = x }
		}
	}
	return nil
}

// set assigns x to the field of the struct at base.
func (f *planField) set(base unsafe.Pointer, x any) error {
	p := unsafe.Add(base, f.offset)
	if x == nil {
		f.clear(p)
		return nil
	}
	xt := reflect.TypeOf(x)
	if f.fast != nil && xt == f.typ {
		f.fast(p, x)
		return nil
	}
	xv := reflect.ValueOf(x)
	if !xt.AssignableTo(f.typ) {
		if !xv.CanConvert(f.typ) {
			return fmt.Errorf("state key %q holds %s, not %s", f.channel, xt, f.typ)
		}
		xv = xv.Convert(f.typ)
	}
	reflect.NewAt(f.typ, p).Elem().Set(xv)
	return nil
}

// clear sets the field at p to its zero value.
func (f *planField) clear(p unsafe.Pointer) {
	reflect.NewAt(f.typ, p).Elem().SetZero()
}

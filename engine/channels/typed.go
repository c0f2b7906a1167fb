package channels

import "reflect"

// The constructors take a reflect.Type because the StateGraph builder makes
// channels from struct field types at run time. These wrappers are for
// code that knows the type statically.

// LastValueOf returns NewLastValue for T.
func LastValueOf[T any]() *LastValue { return NewLastValue(reflect.TypeFor[T]()) }

// LastValueAfterFinishOf returns NewLastValueAfterFinish for T.
func LastValueAfterFinishOf[T any]() *LastValueAfterFinish {
	return NewLastValueAfterFinish(reflect.TypeFor[T]())
}

// EphemeralValueOf returns NewEphemeralValue for T.
func EphemeralValueOf[T any](guard bool) *EphemeralValue {
	return NewEphemeralValue(reflect.TypeFor[T](), guard)
}

// UntrackedValueOf returns NewUntrackedValue for T.
func UntrackedValueOf[T any](guard bool) *UntrackedValue {
	return NewUntrackedValue(reflect.TypeFor[T](), guard)
}

// AnyValueOf returns NewAnyValue for T.
func AnyValueOf[T any]() *AnyValue { return NewAnyValue(reflect.TypeFor[T]()) }

// BinaryOperatorOf returns NewBinaryOperator for T.
func BinaryOperatorOf[T any](reduce Reducer) *BinaryOperator {
	return NewBinaryOperator(reflect.TypeFor[T](), reduce)
}

// TopicOf returns NewTopic for elements of type T; Get returns a []T.
func TopicOf[T any](accumulate bool) *Topic { return NewTopic(reflect.TypeFor[T](), accumulate) }

// ReducerFunc adapts a typed function to a Reducer, so a reducer can be
// written without type assertions. next is converted like a channel write
// (a JSON number to an int, a []any to a []string, ...); a value that does
// not fit U is an error wrapping ErrInvalidUpdate. f must not modify
// current in place (see Reducer).
func ReducerFunc[T, U any](f func(current T, next U) T) Reducer {
	ut := reflect.TypeFor[U]()
	return func(current, next any) (any, error) {
		cur, ok := current.(T)
		if !ok && current != nil {
			return nil, typeMismatch(reflect.TypeOf(current), reflect.TypeFor[T]())
		}
		n, ok := next.(U)
		if !ok {
			conv, err := convertTo(ut, next)
			if err != nil {
				return nil, err
			}
			n, _ = conv.(U) // conv is nil only when U is an interface: n stays zero
		}
		return f(cur, n), nil
	}
}

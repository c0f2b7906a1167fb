package pgsaver

import "github.com/jackc/pgx/v5/pgtype"

// A put's parameters go to pgx as the types below rather than as strings,
// byte slices and slices of them. pgx encodes a [][]byte through
// reflection, and any array by boxing each element in an interface, one
// allocation an element; a string or []byte parameter is boxed too. For a
// sync superstep this cost more client time than the rest of the plan.
// These types hand pgx pointers (an interface holding a pointer allocates
// nothing) through the valuer interfaces its codecs take, so pgx writes
// the same bytes with no reflection and no allocation of its own.
//
// Each is a named form of the value it points to: (*textArray)(&s) for
// an s []string. A nil array is sent as the empty array '{}', as the
// statements expect, never as NULL.
type (
	// textArray is a text[] parameter.
	textArray []string
	// int8Array is a bigint[] parameter.
	int8Array []int64
	// byteaArray is a bytea[] parameter; a nil element is NULL.
	byteaArray [][]byte
	// textParam is a text parameter, or an element of a textArray.
	textParam string
	// int8Param is an element of an int8Array.
	int8Param int64
	// byteaParam is a bytea parameter, or an element of a byteaArray;
	// nil is NULL.
	byteaParam []byte
)

// TextValue implements pgtype.TextValuer.
func (p *textParam) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: string(*p), Valid: true}, nil
}

// Int64Value implements pgtype.Int64Valuer.
func (p *int8Param) Int64Value() (pgtype.Int8, error) {
	return pgtype.Int8{Int64: int64(*p), Valid: true}, nil
}

// BytesValue implements pgtype.BytesValuer.
func (p *byteaParam) BytesValue() ([]byte, error) { return *p, nil }

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *textArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *textArray) Index(i int) any                     { return (*textParam)(&(*a)[i]) }
func (a *textArray) IndexType() any                      { return (*textParam)(nil) }

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *int8Array) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *int8Array) Index(i int) any                     { return (*int8Param)(&(*a)[i]) }
func (a *int8Array) IndexType() any                      { return (*int8Param)(nil) }

// Dimensions, Index and IndexType implement pgtype.ArrayGetter.
func (a *byteaArray) Dimensions() []pgtype.ArrayDimension { return dimensions(len(*a)) }
func (a *byteaArray) Index(i int) any                     { return (*byteaParam)(&(*a)[i]) }
func (a *byteaArray) IndexType() any                      { return (*byteaParam)(nil) }

// oneDimension[n] is the dimensions of an array of n elements, shared
// (pgx only reads them) so that Dimensions allocates nothing for the
// arrays a put sends.
var oneDimension = func() (d [32][1]pgtype.ArrayDimension) {
	for n := range d {
		d[n][0] = pgtype.ArrayDimension{Length: int32(n), LowerBound: 1}
	}
	return d
}()

// dimensions is the one dimension of an array of n elements.
func dimensions(n int) []pgtype.ArrayDimension {
	if n < len(oneDimension) {
		return oneDimension[n][:]
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

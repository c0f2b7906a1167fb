package pgsaver

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// A put's parameters are sent byte for byte as pgx sends the plain
// strings, slices and arrays they stand for (a nil array as an empty
// one, as nonNil had it), in the same formats.
func TestParamsEncodeAsPgx(t *testing.T) {
	t.Parallel()
	long := make([]string, 40)
	longInts := make([]int64, 40)
	for i := range long {
		long[i], longInts[i] = fmt.Sprint("ch", i), int64(i)<<40
	}
	texts := [][]string{nil, {}, {"n"}, {"a", "", "é\"{}", "NULL"}, long}
	ints := [][]int64{nil, {}, {-1, 0, 1 << 62}, longInts}
	bytesOf := [][][]byte{nil, {}, {nil}, {[]byte("42"), nil, {}, []byte(`{"n":1}`)}}
	var ours, theirs []any
	var oids []uint32
	for _, s := range texts {
		a := textArray(s)
		ours, theirs, oids = append(ours, &a), append(theirs, nonNil(s)), append(oids, pgtype.TextArrayOID)
	}
	for _, s := range ints {
		a := int8Array(s)
		ours, theirs, oids = append(ours, &a), append(theirs, nonNil(s)), append(oids, pgtype.Int8ArrayOID)
	}
	for _, s := range bytesOf {
		a := byteaArray(s)
		ours, theirs, oids = append(ours, &a), append(theirs, nonNil(s)), append(oids, pgtype.ByteaArrayOID)
	}
	for _, s := range []string{"", "thread-1", "01a21908-a3c4-75f8-ab64-f5f29e0a9f0c"} {
		p := textParam(s)
		ours, theirs, oids = append(ours, &p), append(theirs, s), append(oids, pgtype.TextOID)
	}
	for _, n := range []int64{0, 7, -1, 1 << 62} {
		p := int8Param(n)
		ours, theirs, oids = append(ours, &p), append(theirs, n), append(oids, pgtype.Int8OID)
	}
	for _, b := range [][]byte{nil, {}, []byte(`[["t","",0,"n",42]]`)} {
		p := byteaParam(b)
		ours, theirs, oids = append(ours, &p), append(theirs, b), append(oids, pgtype.ByteaOID)
	}
	for _, b := range [][]byte{nil, []byte(`{"step": 1, "parents": {}}`)} {
		for _, oid := range []uint32{pgtype.JSONBOID, pgtype.JSONOID} {
			p := jsonParam(b)
			ours, theirs, oids = append(ours, &p), append(theirs, b), append(oids, oid)
		}
	}
	for _, b := range [][]byte{nil, []byte(`{"step":1}`)} {
		for _, oid := range []uint32{pgtype.JSONBOID, pgtype.ByteaOID} {
			ours, theirs, oids = append(ours, b), append(theirs, b), append(oids, oid)
		}
	}
	m := pgtype.NewMap()
	sd := &pgconn.StatementDescription{Name: "s", ParamOIDs: oids}
	var got, want pgx.ExtendedQueryBuilder
	if err := got.Build(m, sd, ours); err != nil {
		t.Fatal(err)
	}
	if err := want.Build(m, sd, theirs); err != nil {
		t.Fatal(err)
	}
	var e paramEncoder
	for range 2 { // the second time on the first's buffers
		if !e.encode(oids, ours) {
			t.Fatal("the saver's encoder refused its own parameters")
		}
		for i := range oids {
			w := want.ParamValues[i]
			for by, g := range map[string][]byte{"pgx": got.ParamValues[i], "paramEncoder": e.values[i]} {
				f := got.ParamFormats[i]
				if by == "paramEncoder" {
					f = e.formats[i]
				}
				if !bytes.Equal(g, w) || (g == nil) != (w == nil) || f != want.ParamFormats[i] {
					t.Errorf("parameter %d (%v) by %s: format %d %x, pgx sends format %d %x", i, theirs[i], by, f, g, want.ParamFormats[i], w)
				}
			}
		}
	}
	// Anything else is left to pgx.
	for _, args := range [][]any{{"a string"}, {int64(1)}, {[]string{"a"}}, {&ours[0]}} {
		if e.encode([]uint32{pgtype.TextOID}, args) {
			t.Errorf("the encoder took %T", args[0])
		}
	}
	if e.encode([]uint32{pgtype.Int8OID}, []any{ours[0]}) {
		t.Error("the encoder took a text[] for a bigint")
	}
}

// nonNil turns a nil slice into an empty one, which pgx sends as '{}'
// rather than NULL.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Each of the saver's types goes only to a parameter of its own type:
// anything else is left to pgx, which converts or refuses it.
func TestParamsRefuseOtherTypes(t *testing.T) {
	t.Parallel()
	text, bytea, js := textParam("a"), byteaParam("b"), jsonParam(`{}`)
	texts, ints, byteas := textArray{"a"}, int8Array{1}, byteaArray{[]byte("b")}
	all := []uint32{pgtype.TextOID, pgtype.ByteaOID, pgtype.JSONBOID, pgtype.JSONOID, pgtype.TextArrayOID,
		pgtype.Int8ArrayOID, pgtype.ByteaArrayOID, pgtype.Int8OID, pgtype.VarcharOID}
	for _, c := range []struct {
		arg  any
		oids []uint32 // the types it may go to
	}{
		{&text, []uint32{pgtype.TextOID}},
		{&bytea, []uint32{pgtype.ByteaOID}},
		{&js, []uint32{pgtype.JSONBOID, pgtype.JSONOID}},
		{&texts, []uint32{pgtype.TextArrayOID}},
		{&ints, []uint32{pgtype.Int8ArrayOID}},
		{&byteas, []uint32{pgtype.ByteaArrayOID}},
		{[]byte("x"), []uint32{pgtype.ByteaOID, pgtype.JSONBOID, pgtype.JSONOID}},
	} {
		for _, oid := range all {
			var e paramEncoder
			if got, want := e.encode([]uint32{oid}, []any{c.arg}), slices.Contains(c.oids, oid); got != want {
				t.Errorf("encoding a %T for type %d: %v, want %v", c.arg, oid, got, want)
			}
		}
	}
}

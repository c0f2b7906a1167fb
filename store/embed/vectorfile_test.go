package embed

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
)

func smallRows() []WordVector {
	return []WordVector{
		{Word: "the", Rank: 1, Vector: []float32{0.5, -1.25, 3}},
		{Word: "cat", Rank: 7, Vector: []float32{-2, 0.001, 0}},
		{Word: "zero", Rank: 9, Vector: []float32{0, 0, 0}},
		{Word: "ünï", Rank: 20, Vector: []float32{1e-3, -2e-3, 4e-3}},
	}
}

func writeSmall(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteWordVectors(&buf, 100, smallRows()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestWordVectorsRoundTrip(t *testing.T) {
	t.Parallel()
	rows := smallRows()
	f, err := parseWordVectors(writeSmall(t))
	if err != nil {
		t.Fatal(err)
	}
	if f.dim != 3 || f.vocabSize != 100 || len(f.words) != len(rows) {
		t.Fatalf("dim %d vocab %d rows %d; want 3, 100, %d", f.dim, f.vocabSize, len(f.words), len(rows))
	}
	for i, r := range rows {
		if f.words[i] != r.Word || f.ranks[i] != r.Rank || f.index[r.Word] != int32(i) {
			t.Errorf("row %d: word %q rank %d index %d; want %q, %d, %d", i, f.words[i], f.ranks[i], f.index[r.Word], r.Word, r.Rank, i)
		}
		var maxAbs float64
		for _, v := range r.Vector {
			maxAbs = max(maxAbs, math.Abs(float64(v)))
		}
		// Rounding to the nearest of 255 levels errs by at most half a step.
		tol := maxAbs/127/2 + 1e-9
		for j, q := range f.row(i) {
			got := float64(int8(q)) * float64(f.scales[i])
			if math.Abs(got-float64(r.Vector[j])) > tol {
				t.Errorf("row %d component %d = %v, want %v ± %v", i, j, got, r.Vector[j], tol)
			}
		}
	}
}

func TestWriteWordVectorsRejectsBadRows(t *testing.T) {
	t.Parallel()
	v := []float32{1, 2}
	cases := []struct {
		name  string
		vocab int
		rows  []WordVector
		want  string
	}{
		{"no rows", 10, nil, "no rows"},
		{"empty vector", 10, []WordVector{{Word: "a", Rank: 1}}, "vector length 0"},
		{"vocabulary smaller than rows", 1, []WordVector{{"a", 1, v}, {"b", 2, v}}, "vocabulary size 1"},
		{"ragged", 10, []WordVector{{"a", 1, v}, {"b", 2, []float32{1}}}, `row 1 ("b") has 1 components, want 2`},
		{"rank zero", 10, []WordVector{{"a", 0, v}}, "has rank 0"},
		{"ranks not ascending", 10, []WordVector{{"a", 2, v}, {"b", 2, v}}, `row 1 ("b") has rank 2`},
		{"rank beyond vocabulary", 10, []WordVector{{"a", 11, v}}, "has rank 11"},
		{"uppercase", 10, []WordVector{{"Cat", 1, v}}, `"Cat" is not a lowercase letter/digit token`},
		{"punctuation", 10, []WordVector{{"n't", 1, v}}, `"n't" is not`},
		{"empty word", 10, []WordVector{{"", 1, v}}, `"" is not`},
		{"duplicate", 10, []WordVector{{"a", 1, v}, {"a", 2, v}}, `duplicate word "a"`},
		{"NaN", 10, []WordVector{{"a", 1, []float32{1, float32(math.NaN())}}}, "component 1 is NaN"},
		{"Inf", 10, []WordVector{{"a", 1, []float32{float32(math.Inf(-1)), 1}}}, "component 0 is -Inf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := WriteWordVectors(&buf, tc.vocab, tc.rows)
			if !errors.Is(err, ErrVectorFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("WriteWordVectors = %v; want ErrVectorFile saying %q", err, tc.want)
			}
		})
	}
}

func TestParseWordVectorsRejectsCorruptFiles(t *testing.T) {
	t.Parallel()
	good := writeSmall(t)
	rowsEnd := vectorHeaderSize + 4*(4+3)
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		want   string
	}{
		{"empty", func([]byte) []byte { return nil }, "header"},
		{"wrong magic", func(b []byte) []byte { b[0] = 'X'; return b }, "header"},
		{"zero dim", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0); return b }, "dimension 0"},
		{"huge dim", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 1<<30); return b }, "dimension 1073741824"},
		{"more rows than vocabulary", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 2); return b }, "4 rows from a vocabulary of 2"},
		{"huge row count", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[12:], 1<<31)
			binary.LittleEndian.PutUint32(b[16:], 1<<31)
			return b
		}, "truncated"},
		{"truncated vectors", func(b []byte) []byte { return b[:rowsEnd-1] }, "truncated"},
		{"truncated words", func(b []byte) []byte { return b[:len(b)-2] }, "word list truncated"},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }, "1 unexpected trailing bytes"},
		{"negative scale", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[vectorHeaderSize:], math.Float32bits(-1))
			return b
		}, "row 0 has scale -1"},
		{"duplicate word", func(b []byte) []byte {
			return bytes.Replace(b, []byte("cat"), []byte("the"), 1)
		}, `duplicate word "the"`},
		{"ranks not ascending", func(b []byte) []byte {
			b[rowsEnd] = 50 // the first rank (1 byte as uvarint) now exceeds the second
			return b
		}, "row 1 has rank 7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseWordVectors(tc.mutate(bytes.Clone(good)))
			if !errors.Is(err, ErrVectorFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parse = %v; want ErrVectorFile saying %q", err, tc.want)
			}
		})
	}
}

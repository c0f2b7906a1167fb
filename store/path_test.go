package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/store"
)

func TestPathSelect(t *testing.T) {
	t.Parallel()
	doc := map[string]any{
		"a":    map[string]any{"b": "ab", "c": map[string]any{"d": 1.5}},
		"list": []any{"x", "y", "z"},
		"msgs": []any{
			map[string]any{"content": "hi", "role": "user"},
			map[string]any{"content": "yo", "role": "ai"},
			map[string]any{"role": "tool"},
		},
		"n":      nil,
		"w.x":    "dotted",
		"flag":   true,
		"nested": []any{[]any{1.0, 2.0}, []any{3.0}},
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"$", []string{`{"a":{"b":"ab","c":{"d":1.5}},"flag":true,"list":["x","y","z"],"msgs":[{"content":"hi","role":"user"},{"content":"yo","role":"ai"},{"role":"tool"}],"n":null,"nested":[[1,2],[3]],"w.x":"dotted"}`}},
		{"a.b", []string{"ab"}},
		{"a.c", []string{`{"d":1.5}`}},
		{"a.c.d", []string{"1.5"}},
		{"a.missing", []string{}},
		{"list[0]", []string{"x"}},
		{"list[-1]", []string{"z"}},
		{"list[3]", []string{}},
		{"list[-4]", []string{}},
		{"list[*]", []string{"x", "y", "z"}},
		{"msgs[*].content", []string{"hi", "yo"}},
		{"msgs[*].{content,role}", []string{"hi", "user", "yo", "ai", "tool"}},
		{"{a.b,list[0]}", []string{"ab", "x"}},
		{"a.*", []string{"ab", `{"d":1.5}`}},
		{"*", []string{`{"b":"ab","c":{"d":1.5}}`, "true", `["x","y","z"]`, `[{"content":"hi","role":"user"},{"content":"yo","role":"ai"},{"role":"tool"}]`, `[[1,2],[3]]`, "dotted"}},
		{"nested[*][*]", []string{"1", "2", "3"}},
		{`w\.x`, []string{"dotted"}},
		{"n", []string{}},
		{"flag", []string{"true"}},
		{"a[0]", []string{}},
		{"list.b", []string{}},
	} {
		p, err := store.ParsePath(tc.path)
		if err != nil {
			t.Errorf("%q: %v", tc.path, err)
			continue
		}
		got, err := p.Texts(doc)
		if err != nil {
			t.Errorf("%q: %v", tc.path, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestPathErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, msg string }{
		{"", "empty path"},
		{"a.", "expected a field name"},
		{".a", "expected a field name"},
		{"a..b", "expected a field name"},
		{"a[", "unclosed"},
		{"a[x]", "not \"*\" or an array index"},
		{"a[01]", "not \"*\" or an array index"},
		{"{a,b", "unclosed"},
		{"{}", "empty path"},
		{"a{b}", "expected"},
		{`a\`, "backslash"},
		{"$.a", "expected a field name"},
		{strings.Repeat("a.", 40) + "a", "steps"},
		{strings.Repeat("{", 6) + "a" + strings.Repeat("}", 6), "nest"},
		{strings.Repeat("a", store.MaxPathBytes+1), "bytes"},
	} {
		_, err := store.ParsePath(tc.path)
		if !errors.Is(err, store.ErrInvalidPath) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: err = %v, want ErrInvalidPath mentioning %q", tc.path, err, tc.msg)
		}
	}
}

func TestPathExpansionLimit(t *testing.T) {
	t.Parallel()
	row := make([]any, 40)
	for i := range row {
		row[i] = "x"
	}
	grid := make([]any, 40)
	for i := range grid {
		grid[i] = row
	}
	doc := map[string]any{"g": grid}
	p, err := store.ParsePath("g[*][*]")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Texts(doc); !errors.Is(err, store.ErrInvalidPath) || !strings.Contains(err.Error(), "more than") {
		t.Errorf("1600 matches: err = %v, want the match limit", err)
	}
	if got, err := (must(store.ParsePath("g[0][*]"))).Texts(doc); err != nil || len(got) != 40 {
		t.Errorf("40 matches: %d, %v", len(got), err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestIndexTextsFieldNames(t *testing.T) {
	t.Parallel()
	doc := map[string]any{"msgs": []any{"a", "b"}, "title": "t", "x": map[string]any{"0": "dup"}}
	got, err := store.IndexTexts(doc, []string{"title", "msgs[*]", "missing", "msgs[*].0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.FieldText{{Field: "title", Text: "t"}, {Field: "msgs[*].0", Text: "a"}, {Field: "msgs[*].1", Text: "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IndexTexts = %+v, want %+v", got, want)
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"$", "a.b", "a[0]", "a[-1]", "a[*].b", "{a,b.c}", "x.*", `a\.b`, "m[*].{c,d[0]}", "*"} {
		f.Add(s)
	}
	doc := map[string]any{"a": map[string]any{"b": []any{"x", map[string]any{"c": 1.0}}}, "x": []any{[]any{"y"}}}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := store.ParsePath(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidPath) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidPath", s, err)
			}
			return
		}
		printed := p.String()
		again, err := store.ParsePath(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("%q: print is not stable: %q then %q", s, printed, again.String())
		}
		t1, err1 := p.Texts(doc)
		t2, err2 := again.Texts(doc)
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(t1, t2) {
			t.Fatalf("%q and its print %q select differently: %v/%v vs %v/%v", s, printed, t1, err1, t2, err2)
		}
	})
}

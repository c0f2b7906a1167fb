package handlers

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name, in string
		want     any
		errText  string
	}{
		{name: "object", in: `{"a": [1, {"b": null}], "c": "x"}`, want: map[string]any{"a": []any{1.0, map[string]any{"b": nil}}, "c": "x"}},
		{name: "scalar", in: ` true `, want: true},
		{name: "64 levels", in: deep(64), want: nest(64)},
		{name: "65 levels", in: deep(65), errText: "nested deeper than 64"},
		{name: "duplicate key", in: `{"a": 1, "a": 2}`, errText: `key "a" appears twice`},
		{name: "duplicate nested key", in: `{"x": {"k": 1, "k": 1}}`, errText: `key "k" appears twice`},
		{name: "same key in two objects", in: `[{"k": 1}, {"k": 2}]`, want: []any{map[string]any{"k": 1.0}, map[string]any{"k": 2.0}}},
		{name: "syntax", in: `{"a": }`, errText: "invalid character"},
		{name: "trailing", in: `{} {}`, errText: "more than one JSON value"},
		{name: "empty", in: "  ", errText: "empty"},
	} {
		got, err := DecodeJSON(tc.in)
		if tc.errText != "" {
			if !errors.Is(err, ErrBadJSON) || !strings.Contains(err.Error(), tc.errText) {
				t.Errorf("%s: err = %v, want ErrBadJSON saying %q", tc.name, err, tc.errText)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: = %#v, %v; want %#v", tc.name, got, err, tc.want)
		}
	}
}

func nest(n int) any {
	var v any = []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

func TestDecodeJSONObjectRefusesOtherValues(t *testing.T) {
	t.Parallel()
	if _, err := DecodeJSONObject(`[1]`); err == nil || !strings.Contains(err.Error(), "want a JSON object") {
		t.Fatalf("err = %v", err)
	}
}

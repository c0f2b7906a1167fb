package handlers_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/handlers"
)

// FuzzDecodeJSON feeds any text to the decoder every form field goes
// through: it never panics; what it accepts is valid JSON and decodes to
// what encoding/json makes of it; what is not valid JSON is refused with
// ErrBadJSON and a message of bounded size (a huge input does not come
// back whole in an error page).
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `1`, `-0.5e10`, `"yes"`, `yes`, `null`, `true`, `{"a":1,"a":2}`, `{"a":{"a":1},"b":{"a":2}}`,
		`[1,2,`, `{"a":}`, `{"a":1} {"b":2}`, `"\ud800"`, "\"\x00\"", `{"` + strings.Repeat("k", 300) + `":1}`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 64) + strings.Repeat("]", 64),
		`  `, `{"a":[{"b":[{"c":null}]}]}`, `1e400`, `{"x":"é"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := handlers.DecodeJSON(s)
		if err != nil {
			if !errors.Is(err, handlers.ErrBadJSON) {
				t.Fatalf("%q: error %v does not wrap ErrBadJSON", s, err)
			}
			if n := len(err.Error()); n > 2048 {
				t.Fatalf("%q: error message of %d bytes", s, n)
			}
			return
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("%q: accepted, but it is not valid JSON", s)
		}
		var want any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%q: accepted, but encoding/json says %v", s, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: decoded %#v, encoding/json %#v", s, v, want)
		}
	})
}

package jsonfast_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/superstep-dev/superstep/internal/jsonfast"
)

type named int

func (named) MarshalJSON() ([]byte, error) { return []byte(`"named"`), nil }

// Marshal gives exactly what encoding/json gives, fast path or not.
func TestMarshalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, 0, -1, 42, math.MaxInt64, math.MinInt64, int64(-7), int32(5), uint(9), uint64(math.MaxUint64),
		"", "plain text 123", `quote"`, `back\slash`, "<html>", "a&b", "tab\t", "é", "\x00", "\x7f",
		1.5, []int{1}, map[string]int{"a": 1}, named(3), struct{ A int }{1}, make(chan int),
	}
	for _, v := range values {
		got, err := jsonfast.Marshal(v)
		want, werr := json.Marshal(v)
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%#v) = %s, %v; encoding/json gives %s, %v", v, got, err, want, werr)
		}
		// AppendSimple keeps what the buffer held and adds the same bytes,
		// or leaves it as it was.
		prefix := []byte("[1,")
		got, ok := jsonfast.AppendSimple(prefix, v)
		if ok && !bytes.Equal(got, append([]byte("[1,"), want...)) || !ok && string(got) != "[1," {
			t.Errorf("AppendSimple([1,, %#v) = %s, %v; want [1,%s", v, got, ok, want)
		}
	}
}

// Simple accepts only valid JSON free of escapes, and the common scalars.
func TestSimple(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw  string
		want bool
	}{
		{"null", true}, {"true", true}, {"false", true}, {"0", true}, {"-12", true}, {"1234567890", true},
		{`""`, true}, {`"abc def"`, true},
		{"", false}, {"-", false}, {"01", false}, {"1.5", false}, {"1e3", false}, {`"a\u0000"`, false},
		{`"a\"b"`, false}, {`"é"`, false}, {`"abc`, false}, {`"`, false}, {"[1]", false}, {"nul", false}, {" 1", false},
	} {
		if got := jsonfast.Simple([]byte(c.raw)); got != c.want {
			t.Errorf("Simple(%q) = %v, want %v", c.raw, got, c.want)
		}
		if c.want && !json.Valid([]byte(c.raw)) {
			t.Errorf("Simple accepts %q, which is not valid JSON", c.raw)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "plain", `quote " and \ slash`, "<a&b>", "tab\there", "é ünïcode", "\xff bad utf-8", "line\u2028sep"} {
		want, _ := json.Marshal(s)
		if got := jsonfast.AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

// Package jsonfast encodes and recognises the small JSON values a graph
// writes on almost every superstep — null, booleans, integers and plain
// ASCII strings — without encoding/json's reflection or its scanner.
// Anything else goes to encoding/json, so results are always exactly what
// encoding/json gives.
package jsonfast

import (
	"encoding/json"
	"strconv"
)

// Marshal is json.Marshal with a fast path for nil, bool, the built-in
// integer types and strings of printable ASCII that need no escaping. Only
// the built-in types themselves take it (a type switch never matches a
// named type, which might have its own MarshalJSON).
func Marshal(v any) ([]byte, error) {
	if b, ok := AppendSimple(nil, v); ok {
		return b, nil
	}
	return json.Marshal(v)
}

// AppendSimple appends the encoding of v to dst when v takes Marshal's
// fast path, and reports false (dst untouched) when it does not, so that
// several small values can share one buffer while a large one is encoded
// on its own, without a second copy.
func AppendSimple(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case int:
		return strconv.AppendInt(dst, int64(x), 10), true
	case int64:
		return strconv.AppendInt(dst, x, 10), true
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), true
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(dst, x, 10), true
	case string:
		if plain(x) {
			return appendQuoted(dst, x), true
		}
	}
	return dst, false
}

// AppendString appends s as encoding/json writes it (HTML-safe): plain
// printable ASCII as it is, anything else through encoding/json itself.
func AppendString(dst []byte, s string) []byte {
	if !plain(s) {
		q, _ := json.Marshal(s)
		return append(dst, q...)
	}
	return appendQuoted(dst, s)
}

// appendQuoted appends s, which plain accepts, in quotes.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plain reports whether s is printable ASCII that encoding/json writes as
// it is (it escapes ", \, <, > and &).
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// Simple reports whether raw is null, true, false, an integer, or a string
// of printable ASCII without escapes: valid JSON, valid UTF-8, and free of
// NUL. False means "not known to be simple", not invalid.
func Simple(raw []byte) bool {
	switch string(raw) {
	case "null", "true", "false":
		return true
	}
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) < 2 || raw[len(raw)-1] != '"' {
			return false
		}
		for _, c := range raw[1 : len(raw)-1] {
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
			return false
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return false
			}
		}
		return true
	}
	return false
}

package models

import (
	"bytes"
	"encoding/json"
	"errors"
)

// errUnbalanced is ParsePartialJSON's error for a closing bracket that
// does not match the open one; upstream returns None there.
var errUnbalanced = errors.New("unbalanced brackets")

// ParsePartialJSON parses the prefix of a JSON document a model has
// streamed so far, as upstream's parse_partial_json: it closes an open
// string and the open objects and arrays, and when that is still not
// JSON (a dangling key, a comma, half a literal) drops characters from
// the end until it is. Raw newlines, tabs and carriage returns inside
// strings are accepted. Numbers come back as json.Number.
func ParsePartialJSON(s string) (any, error) {
	if v, err := decodeAny([]byte(s)); err == nil {
		return v, nil
	}
	var (
		out      = make([]byte, 0, len(s)+8)
		stack    []byte
		inString bool
		escaped  bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case c == '"' && !escaped:
				inString = false
			case (c == '\n' || c == '\t' || c == '\r') && !escaped:
				out = append(out, '\\', map[byte]byte{'\n': 'n', '\t': 't', '\r': 'r'}[c])
				continue
			case c == '\\':
				escaped = !escaped
			default:
				escaped = false
			}
			out = append(out, c)
			continue
		}
		switch c {
		case '"':
			inString, escaped = true, false
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return nil, errUnbalanced
			}
			stack = stack[:len(stack)-1]
		}
		out = append(out, c)
	}
	if inString {
		if escaped {
			out = out[:len(out)-1]
		}
		out = append(out, '"')
	}
	closing := make([]byte, len(stack))
	for i := range stack {
		closing[i] = stack[len(stack)-1-i]
	}
	for len(out) > 0 {
		candidate := append(bytes.Clone(out), closing...)
		if v, err := decodeAny(candidate); err == nil {
			return v, nil
		}
		out = out[:len(out)-1]
	}
	var v any
	return v, json.Unmarshal([]byte(s), &v)
}

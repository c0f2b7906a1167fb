package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxJSONDepth is how deeply JSON from a request may nest. Go's decoder
// allows 10,000 levels; a form field has no reason to go past a few.
const MaxJSONDepth = 64

// ErrBadJSON is wrapped by every DecodeJSON error.
var ErrBadJSON = errors.New("bad JSON")

// DecodeJSON parses one JSON value from a request field. Besides syntax it
// refuses nesting deeper than MaxJSONDepth, duplicate keys in an object
// (encoding/json would silently keep the last one, so what a person typed
// and what runs could differ), and trailing data. Errors say where.
func DecodeJSON(s string) (any, error) {
	if err := checkJSON(s); err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadJSON, err)
	}
	return v, nil
}

// DecodeJSONObject is DecodeJSON for a value that must be an object.
func DecodeJSONObject(s string) (map[string]any, error) {
	v, err := DecodeJSON(s)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object ({...}), got %s", ErrBadJSON, describe(v))
	}
	return m, nil
}

type jsonFrame struct {
	object  bool
	wantKey bool
	keys    map[string]struct{}
}

func checkJSON(s string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("%w: empty; type a JSON value", ErrBadJSON)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var stack []*jsonFrame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v (near byte %d)", ErrBadJSON, err, dec.InputOffset())
		}
		if len(stack) == 0 {
			values++
			if values > 1 {
				return fmt.Errorf("%w: more than one JSON value (extra data at byte %d)", ErrBadJSON, dec.InputOffset())
			}
		}
		var top *jsonFrame
		if n := len(stack); n > 0 {
			top = stack[n-1]
		}
		if top != nil && top.object && top.wantKey && tok != json.Delim('}') {
			k := tok.(string) // the decoder only yields strings as keys
			if _, dup := top.keys[k]; dup {
				return fmt.Errorf("%w: key %q appears twice in one object (near byte %d)", ErrBadJSON, k, dec.InputOffset())
			}
			top.keys[k] = struct{}{}
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxJSONDepth {
				return fmt.Errorf("%w: nested deeper than %d levels", ErrBadJSON, MaxJSONDepth)
			}
			if top != nil && top.object {
				top.wantKey = true
			}
			f := &jsonFrame{object: tok == json.Delim('{')}
			if f.object {
				f.wantKey, f.keys = true, map[string]struct{}{}
			}
			stack = append(stack, f)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.object {
				top.wantKey = true
			}
		}
	}
	return nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

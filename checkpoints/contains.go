package checkpoints

import (
	"bytes"
	"encoding/json"
	"math/big"
)

// decodeJSON decodes trusted, already validated JSON into generic values,
// keeping numbers as json.Number so that containment compares them by
// value without float rounding.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// contains reports whether doc contains filter with the semantics of
// Postgres jsonb containment (doc @> filter) below the top level, so that
// the memory saver filters exactly as the Postgres one: objects match as
// subsets, each element of a filter array must be contained in some element
// of the document array, scalars must be equal, numbers by value.
func contains(doc, filter any) bool {
	switch f := filter.(type) {
	case map[string]any:
		d, ok := doc.(map[string]any)
		if !ok {
			return false
		}
		for k, fv := range f {
			dv, ok := d[k]
			if !ok || !contains(dv, fv) {
				return false
			}
		}
		return true
	case []any:
		d, ok := doc.([]any)
		if !ok {
			return false
		}
		for _, fe := range f {
			found := false
			for _, de := range d {
				if contains(de, fe) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case json.Number:
		d, ok := doc.(json.Number)
		return ok && numbersEqual(d, f)
	case nil:
		return doc == nil
	default: // string, bool
		return doc == filter
	}
}

func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}

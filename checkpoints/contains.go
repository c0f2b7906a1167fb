package checkpoints

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
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

// ContainsJSON reports whether have contains want as Postgres' jsonb
// containment (have @> want) decides, on values decoded from JSON
// (objects as map[string]any, arrays as []any, numbers as json.Number,
// float64 or int): objects match as subsets, each element of a wanted
// array must be contained in some element of the held array, a top-level
// array also contains a scalar it holds, scalars must be equal, and
// numbers compare by exact value (1 matches 1.0). The memory saver
// filters metadata with it, as do the thread and assistant registries,
// so memory and Postgres backends select alike.
func ContainsJSON(have, want any) bool { return contains(have, want, true) }

func contains(have, want any, top bool) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok || !contains(hv, wv, false) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, wv := range w {
			found := false
			for _, hv := range h {
				if contains(hv, wv, false) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	if h, ok := have.([]any); ok && top {
		for _, hv := range h {
			if scalarEqual(hv, want) {
				return true
			}
		}
		return false
	}
	return scalarEqual(have, want)
}

// scalarEqual compares two JSON scalars: numbers by exact value, whatever
// Go type decoding gave them; anything else by equality (nil only equals
// nil; a container is never a scalar's equal).
func scalarEqual(a, b any) bool {
	x, aok := number(a)
	y, bok := number(b)
	if aok || bok {
		return aok && bok && x.Cmp(y) == 0
	}
	switch a.(type) {
	case map[string]any, []any:
		return false
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}

// number reads a JSON number as an exact rational.
func number(v any) (*big.Rat, bool) {
	switch n := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(n))
	case float64:
		// The shortest decimal that reads back as n: what JSON decoding
		// made n from, so 0.1 decoded as a float equals the number 0.1.
		return new(big.Rat).SetString(strconv.FormatFloat(n, 'g', -1, 64))
	case int:
		return new(big.Rat).SetInt64(int64(n)), true
	case int64:
		return new(big.Rat).SetInt64(n), true
	}
	return nil, false
}

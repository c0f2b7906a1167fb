package store

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Operator is a filter comparison.
type Operator string

// The filter operators. A plain (non-object) value in a filter means OpEq.
const (
	OpEq  Operator = "$eq"
	OpNe  Operator = "$ne"
	OpGt  Operator = "$gt"
	OpGte Operator = "$gte"
	OpLt  Operator = "$lt"
	OpLte Operator = "$lte"
)

// Filter limits, so a hostile filter cannot make a query arbitrarily large.
const (
	MaxFilterConditions = 64
	MaxFilterDepth      = 16
	MaxFilterKeyBytes   = 1024
)

// Condition is one parsed filter comparison.
type Condition struct {
	// Path is the chain of object keys from the document root. Filters
	// address object fields only, never array elements.
	Path []string
	Op   Operator
	// Value is the operand as JSON decodes it: nil, bool, float64, string,
	// []any or map[string]any. For the ordering operators it is a float64
	// or a string.
	Value any
}

// Filter is a conjunction of conditions, sorted by key then operator.
type Filter []Condition

// ParseFilter parses a filter document.
//
// Each key is a path of object fields separated by "." ("user.age"
// addresses {"user":{"age":…}}); a literal "." or "\" inside a field name is
// written "\." or "\\". Each value is either a plain JSON value (equality),
// an object whose keys are all operators ({"$gte": 18, "$lt": 65}), or an
// object without operator keys, which nests: {"user": {"age": 3}} means
// {"user.age": 3}.
//
// Comparisons are typed. $eq and $ne compare JSON values ($ne also matches
// a missing field). $gt, $gte, $lt and $lte take a number or a string and
// match only fields of that same JSON type: numbers compare numerically,
// strings bytewise (so "9" > "10" but 9 < 10, and "9" is never compared
// with 10).
func ParseFilter(m map[string]any) (Filter, error) {
	var f Filter
	if err := parseFilterInto(&f, nil, m); err != nil {
		return nil, err
	}
	slices.SortFunc(f, func(a, b Condition) int {
		if c := strings.Compare(a.Key(), b.Key()); c != 0 {
			return c
		}
		return strings.Compare(string(a.Op), string(b.Op))
	})
	for i := 1; i < len(f); i++ {
		if f[i].Op == f[i-1].Op && slices.Equal(f[i].Path, f[i-1].Path) {
			return nil, fmt.Errorf("%w: %s on %q is given twice", ErrInvalidFilter, f[i].Op, f[i].Key())
		}
	}
	return f, nil
}

func parseFilterInto(f *Filter, base []string, m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, "$") {
			return fmt.Errorf("%w: operator %q must be inside a field's object, e.g. {\"field\": {%q: …}}", ErrInvalidFilter, k, k)
		}
		if len(k) > MaxFilterKeyBytes {
			return fmt.Errorf("%w: key is %d bytes, at most %d allowed", ErrInvalidFilter, len(k), MaxFilterKeyBytes)
		}
		segs, err := splitFilterKey(k)
		if err != nil {
			return err
		}
		path := append(slices.Clip(base), segs...)
		if len(path) > MaxFilterDepth {
			return fmt.Errorf("%w: key %q nests %d fields deep, at most %d allowed", ErrInvalidFilter, k, len(path), MaxFilterDepth)
		}
		if err := parseFilterValue(f, path, m[k]); err != nil {
			return err
		}
	}
	return nil
}

func parseFilterValue(f *Filter, path []string, raw any) error {
	v, err := normalizeJSON(raw)
	if err != nil {
		return fmt.Errorf("%w: value of %q: %v", ErrInvalidFilter, joinFilterKey(path), err)
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return addCondition(f, Condition{Path: path, Op: OpEq, Value: v})
	}
	if len(obj) == 0 {
		return fmt.Errorf("%w: %q has an empty object; write {\"$eq\": {}} to match an empty object", ErrInvalidFilter, joinFilterKey(path))
	}
	ops, fields := 0, 0
	for k := range obj {
		if strings.HasPrefix(k, "$") {
			ops++
		} else {
			fields++
		}
	}
	switch {
	case ops > 0 && fields > 0:
		return fmt.Errorf("%w: %q mixes operators and field names in one object", ErrInvalidFilter, joinFilterKey(path))
	case fields > 0:
		return parseFilterInto(f, path, obj)
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		op := Operator(name)
		operand := obj[name]
		switch op {
		case OpEq, OpNe:
		case OpGt, OpGte, OpLt, OpLte:
			switch operand.(type) {
			case float64, string:
			default:
				return fmt.Errorf("%w: %s on %q needs a number or a string, got %s", ErrInvalidFilter, op, joinFilterKey(path), jsonType(operand))
			}
		default:
			return fmt.Errorf("%w: unknown operator %q on %q (known: $eq $ne $gt $gte $lt $lte)", ErrInvalidFilter, name, joinFilterKey(path))
		}
		if err := addCondition(f, Condition{Path: path, Op: op, Value: operand}); err != nil {
			return err
		}
	}
	return nil
}

func addCondition(f *Filter, c Condition) error {
	if len(*f) >= MaxFilterConditions {
		return fmt.Errorf("%w: more than %d conditions", ErrInvalidFilter, MaxFilterConditions)
	}
	*f = append(*f, c)
	return nil
}

// splitFilterKey splits a filter key at unescaped dots.
func splitFilterKey(k string) ([]string, error) {
	if k == "" {
		return nil, fmt.Errorf("%w: empty key", ErrInvalidFilter)
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '\\':
			if i+1 == len(k) || (k[i+1] != '.' && k[i+1] != '\\') {
				return nil, fmt.Errorf("%w: key %q: a backslash must be followed by \".\" or \"\\\"", ErrInvalidFilter, k)
			}
			i++
			cur.WriteByte(k[i])
		case '.':
			if cur.Len() == 0 {
				return nil, fmt.Errorf("%w: key %q has an empty field name", ErrInvalidFilter, k)
			}
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() == 0 {
		return nil, fmt.Errorf("%w: key %q has an empty field name", ErrInvalidFilter, k)
	}
	return append(segs, cur.String()), nil
}

func joinFilterKey(path []string) string {
	esc := make([]string, len(path))
	for i, s := range path {
		esc[i] = strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(s)
	}
	return strings.Join(esc, ".")
}

// Key is the condition's path written as a filter key ("a.b", "a\.b").
func (c Condition) Key() string { return joinFilterKey(c.Path) }

// Map prints the filter in canonical form: one key per path, each with an
// operator object. ParseFilter(f.Map()) gives f back.
func (f Filter) Map() map[string]any {
	m := make(map[string]any, len(f))
	for _, c := range f {
		ops, _ := m[c.Key()].(map[string]any)
		if ops == nil {
			ops = map[string]any{}
			m[c.Key()] = ops
		}
		ops[string(c.Op)] = c.Value
	}
	return m
}

// Match reports whether doc satisfies every condition.
func (f Filter) Match(doc map[string]any) bool {
	for _, c := range f {
		if !c.Match(doc) {
			return false
		}
	}
	return true
}

// Match reports whether doc satisfies the condition.
func (c Condition) Match(doc map[string]any) bool {
	v, ok := lookupField(doc, c.Path)
	switch c.Op {
	case OpEq:
		return ok && jsonEqual(v, c.Value)
	case OpNe:
		return !ok || !jsonEqual(v, c.Value)
	}
	if !ok {
		return false
	}
	var cmp int
	switch want := c.Value.(type) {
	case float64:
		got, isNum := v.(float64)
		if !isNum {
			return false
		}
		switch {
		case got < want:
			cmp = -1
		case got > want:
			cmp = 1
		}
	case string:
		got, isStr := v.(string)
		if !isStr {
			return false
		}
		cmp = strings.Compare(got, want)
	default:
		return false
	}
	switch c.Op {
	case OpGt:
		return cmp > 0
	case OpGte:
		return cmp >= 0
	case OpLt:
		return cmp < 0
	case OpLte:
		return cmp <= 0
	}
	return false
}

func lookupField(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// jsonEqual compares two normalized JSON values the way jsonb equality
// does: same type, numbers by value, objects by key set, arrays in order.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case nil:
		return b == nil
	case bool, float64, string:
		return a == b
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !jsonEqual(av, bv) {
				return false
			}
		}
		return true
	}
	return false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case float64:
		return "a number"
	case string:
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}

// normalizeJSON returns v as encoding/json decodes it after encoding it,
// so the memory store holds exactly what Postgres would give back. It
// rejects what jsonb cannot hold: NaN, infinities and NUL characters.
func normalizeJSON(v any) (any, error) {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	if hasNUL(out) {
		return nil, fmt.Errorf("contains a NUL character, which Postgres cannot store")
	}
	return out, nil
}

func hasNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		return slices.ContainsFunc(v, hasNUL)
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// NormalizeValue returns a copy of a document as it will be stored: after
// a JSON round trip (numbers become float64, structs become maps). It
// fails with ErrInvalidValue for what JSON or Postgres cannot hold.
func NormalizeValue(v map[string]any) (map[string]any, error) {
	n, err := normalizeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidValue, err)
	}
	m, _ := n.(map[string]any)
	return m, nil
}

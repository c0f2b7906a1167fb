package transferapproval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// ErrInvalidAnswer matches an answer to the approval question that does not
// fit its schema.
var ErrInvalidAnswer = errors.New("invalid answer")

// Schema is the subset of JSON Schema the approval question uses to
// describe the answers it accepts. It travels in the interrupt payload, so
// a tool (the Studio's approval panel) can render a typed form from it, and
// the node validates the answer against the same value, so the form and
// the check cannot drift apart.
type Schema struct {
	Type        string `json:"type,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Enum and Const restrict a value to listed ones (compared as JSON).
	Enum  []any `json:"enum,omitempty"`
	Const any   `json:"const,omitempty"`
	// Number bounds.
	Minimum          *float64 `json:"minimum,omitempty"`
	ExclusiveMinimum *float64 `json:"exclusiveMinimum,omitempty"`
	Maximum          *float64 `json:"maximum,omitempty"`
	// MaxLength bounds a string, in characters.
	MaxLength *int `json:"maxLength,omitempty"`
	// Object members.
	Properties           map[string]*Schema `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties *bool              `json:"additionalProperties,omitempty"`
	// If and Then make a rule conditional: when the value matches If it
	// must also match Then ("an edit needs an amount").
	If   *Schema `json:"if,omitempty"`
	Then *Schema `json:"then,omitempty"`
}

// AnswerError is an answer that does not fit the schema: Field is the
// property it concerns ("" when it concerns the answer as a whole), so a
// form can show Reason next to that field. It matches ErrInvalidAnswer.
type AnswerError struct {
	Field  string
	Reason string
	// path prefixes Reason in Error: the member the failed check was on
	// (a missing required field is reported on its object, not itself).
	path string
}

// Refusal is what the next question says about a refused answer: the
// error as a whole, and the reason next to its field when it names one.
func Refusal(err error) (problem string, fieldErrors map[string]string) {
	var ae *AnswerError
	if errors.As(err, &ae) && ae.Field != "" {
		fieldErrors = map[string]string{ae.Field: ae.Reason}
	}
	return err.Error(), fieldErrors
}

func (e *AnswerError) Error() string {
	if e.path == "" {
		return ErrInvalidAnswer.Error() + ": " + e.Reason
	}
	return ErrInvalidAnswer.Error() + ": " + e.path + ": " + e.Reason
}

// Unwrap makes errors.Is(err, ErrInvalidAnswer) hold.
func (e *AnswerError) Unwrap() error { return ErrInvalidAnswer }

// Validate checks v, a value as encoding/json decodes it into an any
// (map[string]any, []any, float64, string, bool, nil), against s. The
// error is an *AnswerError (wrapping ErrInvalidAnswer) naming the
// offending field.
func (s *Schema) Validate(v any) error {
	if e := s.check("", v); e != nil {
		return e
	}
	return nil
}

// check returns nil when v matches, else what is wrong and where.
func (s *Schema) check(path string, v any) *AnswerError {
	at := func(format string, args ...any) *AnswerError {
		return &AnswerError{Field: path, Reason: fmt.Sprintf(format, args...), path: path}
	}
	if s.Type != "" && !hasType(s.Type, v) {
		return at("want %s, got %s", article(s.Type), describe(v))
	}
	if s.Const != nil && !jsonEqual(s.Const, v) {
		return at("must be %s, got %s", quote(s.Const), describe(v))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		opts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			opts[i] = quote(e)
		}
		return at("must be one of %s, got %s", strings.Join(opts, ", "), describe(v))
	}
	switch x := v.(type) {
	case float64:
		switch {
		case s.Minimum != nil && x < *s.Minimum:
			return at("must be at least %v, got %v", *s.Minimum, x)
		case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
			return at("must be greater than %v, got %v", *s.ExclusiveMinimum, x)
		case s.Maximum != nil && x > *s.Maximum:
			return at("must be at most %v, got %v", *s.Maximum, x)
		}
	case string:
		if n := len([]rune(x)); s.MaxLength != nil && n > *s.MaxLength {
			return at("must be at most %d characters, got %d", *s.MaxLength, n)
		}
	case map[string]any:
		for _, k := range s.Required {
			if _, ok := x[k]; !ok {
				e := at("%q is required", k)
				e.Field = join(path, k)
				return e
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // report the same field first every time
		for _, k := range keys {
			sub, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return at("unknown field %q (allowed: %s)", k, strings.Join(s.propertyNames(), ", "))
				}
				continue
			}
			if e := sub.check(join(path, k), x[k]); e != nil {
				return e
			}
		}
	}
	if s.If != nil && s.Then != nil && s.If.check(path, v) == nil {
		if e := s.Then.check(path, v); e != nil {
			return e
		}
	}
	return nil
}

func (s *Schema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func hasType(t string, v any) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func article(t string) string {
	if t == "object" || t == "array" || t == "integer" {
		return "an " + t
	}
	return "a " + t
}

// describe names a decoded JSON value for an error message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return fmt.Sprintf("the string %q", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("%v", x)
	}
	return fmt.Sprintf("%T", v)
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprint(v)
}

// jsonEqual compares two values as JSON, so a schema written with Go ints
// or strings matches what encoding/json decodes.
func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var da, db any
	if json.Unmarshal(ja, &da) != nil || json.Unmarshal(jb, &db) != nil {
		return false
	}
	return reflect.DeepEqual(da, db)
}

package handlers

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// formFieldPrefix starts the name of every typed-form input, so a schema
// property can never collide with the form's own fields (action,
// interrupt_id).
const formFieldPrefix = "field."

// answerSchema returns the JSON schema an interrupt value carries: an
// object whose "schema" member is itself an object schema with
// properties. Values are normalised through JSON first, so a Go struct
// payload (as graphs pass to engine.Interrupt) is read by its json names.
func answerSchema(value any) (map[string]any, bool) {
	payload, ok := jsonShape(value).(map[string]any)
	if !ok {
		return nil, false
	}
	s, ok := payload["schema"].(map[string]any)
	if !ok || s["type"] != "object" {
		return nil, false
	}
	if props, ok := s["properties"].(map[string]any); !ok || len(props) == 0 {
		return nil, false
	}
	return s, true
}

// schemaForm builds the typed form for an object schema: one field per
// property, required ones first, then by name, so the order is stable.
// The limits the browser can check (required, bounds, enum choices,
// pattern, lengths) become its attributes; formAnswer checks the same
// ones again.
func schemaForm(s map[string]any) *web.SchemaForm {
	props := s["properties"].(map[string]any)
	var required []string
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required = append(required, name)
			}
		}
	}
	f := &web.SchemaForm{}
	f.Title, _ = s["title"].(string)
	for name, raw := range props {
		p, _ := raw.(map[string]any)
		field := web.FormField{Name: name, Input: formFieldPrefix + name, Required: slices.Contains(required, name)}
		field.Description, _ = p["description"].(string)
		typ, _ := p["type"].(string)
		switch enum, isEnum := p["enum"].([]any); {
		case isEnum && len(enum) > 0:
			field.Kind = "select"
			for _, e := range enum {
				b, _ := json.Marshal(e)
				label := string(b)
				if str, ok := e.(string); ok {
					label = str
				}
				field.Options = append(field.Options, web.FormOption{Value: string(b), Label: label})
			}
		case typ == "number" || typ == "integer":
			field.Kind = typ
			field.Min = bound(p, "minimum")
			field.Max = bound(p, "maximum")
			field.XMin = bound(p, "exclusiveMinimum")
			field.XMax = bound(p, "exclusiveMaximum")
		case typ == "boolean":
			// A choice of yes or no, never a checkbox: an unticked box
			// would answer false for a person who did not decide.
			field.Kind = "boolean"
			field.Options = []web.FormOption{{Value: "true", Label: "yes (true)"}, {Value: "false", Label: "no (false)"}}
		case typ == "string":
			field.Kind = "string"
			// A pattern Go cannot compile cannot be checked here either;
			// the graph's own validation still applies.
			if pat, ok := p["pattern"].(string); ok {
				if _, err := regexp.Compile(pat); err == nil {
					field.Pattern = pat
				}
			}
			field.MinLength = lengthBound(p, "minLength")
			field.MaxLength = lengthBound(p, "maxLength")
		default:
			field.Kind = "json"
		}
		f.Fields = append(f.Fields, field)
	}
	sort.Slice(f.Fields, func(i, j int) bool {
		a, b := f.Fields[i], f.Fields[j]
		if a.Required != b.Required {
			return a.Required
		}
		return a.Name < b.Name
	})
	return f
}

func bound(p map[string]any, key string) string {
	if n, ok := p[key].(float64); ok && !math.IsInf(n, 0) && !math.IsNaN(n) {
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return ""
}

// lengthBound is a non-negative whole-number schema keyword (minLength).
func lengthBound(p map[string]any, key string) string {
	if n, ok := p[key].(float64); ok && n >= 0 && n == math.Trunc(n) && n < 1<<31 {
		return strconv.Itoa(int(n))
	}
	return ""
}

// FieldError is a typed answer refused for one field: which, and the
// limit it broke. It matches runs.ErrInvalidInput (a 400), and the
// approval panel shows Reason next to the field.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if strings.HasPrefix(e.Reason, e.Field+" ") { // "action is required"
		return fmt.Sprintf("%v: %s", runs.ErrInvalidInput, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", runs.ErrInvalidInput, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, runs.ErrInvalidInput) hold.
func (e *FieldError) Unwrap() error { return runs.ErrInvalidInput }

func fieldErr(f web.FormField, format string, args ...any) error {
	return &FieldError{Field: f.Name, Reason: fmt.Sprintf(format, args...)}
}

// formAnswer turns a posted typed form back into the JSON object the
// schema describes: numbers parsed, yes/no choices as booleans, enum
// choices decoded to their JSON values, empty optional fields left out.
// It checks the limits the form shows (required, enum, bounds, pattern,
// lengths), so a request that skips the browser is held to them too; the
// graph validates the rest (rules across fields).
func formAnswer(form *web.SchemaForm, posted url.Values) (map[string]any, error) {
	answer := map[string]any{}
	for _, f := range form.Fields {
		raw := strings.TrimSpace(posted.Get(f.Input))
		if raw == "" {
			if f.Required {
				if len(f.Options) > 0 {
					return nil, fieldErr(f, "%s is required: choose one of %s", f.Name, optionList(f.Options))
				}
				return nil, fieldErr(f, "%s is required", f.Name)
			}
			continue
		}
		switch f.Kind {
		case "select", "boolean":
			i := slices.IndexFunc(f.Options, func(o web.FormOption) bool { return o.Value == raw })
			if i < 0 {
				return nil, fieldErr(f, "%q is not one of the choices (%s)", raw, optionList(f.Options))
			}
			var v any
			if err := json.Unmarshal([]byte(f.Options[i].Value), &v); err != nil {
				return nil, fieldErr(f, "%v", err)
			}
			answer[f.Name] = v
		case "number", "integer":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
				return nil, fieldErr(f, "%q is not a number", raw)
			}
			if f.Kind == "integer" && n != math.Trunc(n) {
				return nil, fieldErr(f, "%q is not a whole number", raw)
			}
			if err := checkBounds(f, n); err != nil {
				return nil, err
			}
			answer[f.Name] = n
		case "json":
			v, err := DecodeJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", runs.ErrInvalidInput, f.Name, err)
			}
			answer[f.Name] = v
		default:
			if err := checkString(f, raw); err != nil {
				return nil, err
			}
			answer[f.Name] = raw
		}
	}
	return answer, nil
}

func optionList(os []web.FormOption) string {
	labels := make([]string, len(os))
	for i, o := range os {
		labels[i] = o.Label
	}
	return strings.Join(labels, ", ")
}

// checkBounds holds n to the field's minimum, maximum and exclusive
// bounds (the form keeps them as the schema's numbers, formatted).
func checkBounds(f web.FormField, n float64) error {
	limit := func(s string) (float64, bool) {
		if s == "" {
			return 0, false
		}
		b, err := strconv.ParseFloat(s, 64)
		return b, err == nil
	}
	if b, ok := limit(f.Min); ok && n < b {
		return fieldErr(f, "%v is below the minimum %v", n, b)
	}
	if b, ok := limit(f.XMin); ok && n <= b {
		return fieldErr(f, "%v must be greater than %v", n, b)
	}
	if b, ok := limit(f.Max); ok && n > b {
		return fieldErr(f, "%v is above the maximum %v", n, b)
	}
	if b, ok := limit(f.XMax); ok && n >= b {
		return fieldErr(f, "%v must be less than %v", n, b)
	}
	return nil
}

// checkString holds s to the field's lengths (in characters, as JSON
// Schema counts them) and pattern (a match anywhere, as JSON Schema
// reads it).
func checkString(f web.FormField, s string) error {
	n := utf8.RuneCountInString(s)
	if m, err := strconv.Atoi(f.MinLength); err == nil && n < m {
		return fieldErr(f, "%d characters is shorter than the minimum length %d", n, m)
	}
	if m, err := strconv.Atoi(f.MaxLength); err == nil && n > m {
		return fieldErr(f, "%d characters is longer than the maximum length %d", n, m)
	}
	if f.Pattern != "" {
		re, err := regexp.Compile(f.Pattern)
		if err == nil && !re.MatchString(s) {
			return fieldErr(f, "%q does not match the pattern %s", s, f.Pattern)
		}
	}
	return nil
}

// pendingViews builds the approval panel's interrupts: each value as
// prose to read (questionProse) with the indented JSON behind it, plus a
// typed form when the value carries a schema, showing the graph's
// reasons for refusing the last answer next to their fields.
func pendingViews(pending []engine.Interruption) []web.PendingView {
	out := make([]web.PendingView, 0, len(pending))
	for _, p := range pending {
		s, cut := runs.Preview(p.Value, PendingPreviewBytes)
		v := web.PendingView{ID: p.ID, Node: p.Node, Value: s, Truncated: cut}
		var errs map[string]string
		v.Prose, v.Facts, errs = questionProse(p.Value)
		if schema, ok := answerSchema(p.Value); ok {
			v.Form = schemaForm(schema)
			for i := range v.Form.Fields {
				f := &v.Form.Fields[i]
				if reason, ok := errs[f.Name]; ok {
					f.Error = reason
					delete(errs, f.Name)
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(errs)) {
			v.Errors = append(v.Errors, web.Fact{Name: name, Text: errs[name]})
		}
		out = append(out, v)
	}
	return out
}

// Members of an interrupt value the approval panel reads specially (the
// answer-errors convention, documented in the handlers package doc).
const (
	// questionKeys are shown as paragraphs, in this order.
	questionKeyQuestion    = "question"
	questionKeyDescription = "description"
	// answerSchemaKey holds the JSON schema of the answer (the typed
	// form); answerErrorsKey the graph's reasons for refusing the last
	// answer, by field: {"errors": {"amount": "over the limit"}}.
	answerSchemaKey = "schema"
	answerErrorsKey = "errors"
	// factTextBytes caps one member shown in the definition list; the
	// raw toggle has all of it.
	factTextBytes = 300
)

// questionProse splits an interrupt value for reading: a string value,
// or an object's question and description, are paragraphs; the object's
// other members are facts (name and text), sorted by name, except the
// answer schema and the errors, which it returns by field. A value of
// any other shape has neither: the panel shows its JSON.
func questionProse(value any) (prose []string, facts []web.Fact, errs map[string]string) {
	switch v := jsonShape(value).(type) {
	case string:
		return []string{v}, nil, nil
	case map[string]any:
		for _, k := range []string{questionKeyQuestion, questionKeyDescription} {
			if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
				prose = append(prose, s)
			}
		}
		if m, ok := v[answerErrorsKey].(map[string]any); ok {
			errs = map[string]string{}
			for field, reason := range m {
				if s, ok := reason.(string); ok {
					errs[field] = s
				} else {
					errs[field] = compact(reason)
				}
			}
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			switch {
			case k == answerSchemaKey || (k == answerErrorsKey && errs != nil):
				continue
			case k == questionKeyQuestion || k == questionKeyDescription:
				if _, ok := v[k].(string); ok {
					continue
				}
			}
			facts = append(facts, web.Fact{Name: k, Text: factText(v[k])})
		}
	}
	return prose, facts, errs
}

func factText(v any) string {
	if s, ok := v.(string); ok {
		if len(s) > factTextBytes {
			return textcut.Cut(s, factTextBytes) + "…"
		}
		return s
	}
	s := encodeJSON(v, false)
	if len(s) > factTextBytes {
		return textcut.Cut(s, factTextBytes) + "…"
	}
	return s
}

// typedAnswer reads a typed form posted for interrupt iid of thread t,
// rebuilding the form from the interrupt's own schema (never from the
// request), so the posted fields are read with the types the graph asked
// for.
func typedAnswer(t runs.Thread, iid string, posted url.Values) (map[string]any, error) {
	if iid == "" {
		return nil, fmt.Errorf("%w: a typed answer needs interrupt_id", runs.ErrInvalidInput)
	}
	i := slices.IndexFunc(t.Pending, func(p engine.Interruption) bool { return p.ID == iid })
	if i < 0 {
		return nil, fmt.Errorf("%w: thread %s has no pending interrupt %q", runs.ErrInvalidInput, t.ID, iid)
	}
	schema, ok := answerSchema(t.Pending[i].Value)
	if !ok {
		return nil, fmt.Errorf("%w: interrupt %q carries no answer schema; use approve, reject or respond", runs.ErrInvalidInput, iid)
	}
	return formAnswer(schemaForm(schema), posted)
}

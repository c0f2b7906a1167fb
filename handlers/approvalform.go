package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/superstep-dev/superstep/engine"
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
		case typ == "boolean":
			field.Kind = "boolean"
		case typ == "string":
			field.Kind = "string"
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
	if n, ok := p[key].(float64); ok {
		return strconv.FormatFloat(n, 'g', -1, 64)
	}
	return ""
}

// formAnswer turns a posted typed form back into the JSON object the
// schema describes: numbers parsed, checkboxes as booleans, enum choices
// decoded to their JSON values, empty optional fields left out. It only
// checks what the form's shape implies; the graph validates the rest.
func formAnswer(form *web.SchemaForm, posted url.Values) (map[string]any, error) {
	answer := map[string]any{}
	for _, f := range form.Fields {
		raw := strings.TrimSpace(posted.Get(f.Input))
		if f.Kind == "boolean" {
			answer[f.Name] = raw != ""
			continue
		}
		if raw == "" {
			if f.Required {
				return nil, fmt.Errorf("%w: %s is required", runs.ErrInvalidInput, f.Name)
			}
			continue
		}
		switch f.Kind {
		case "select":
			i := slices.IndexFunc(f.Options, func(o web.FormOption) bool { return o.Value == raw })
			if i < 0 {
				return nil, fmt.Errorf("%w: %s: %q is not one of the choices", runs.ErrInvalidInput, f.Name, raw)
			}
			var v any
			if err := json.Unmarshal([]byte(f.Options[i].Value), &v); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", runs.ErrInvalidInput, f.Name, err)
			}
			answer[f.Name] = v
		case "number", "integer":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
				return nil, fmt.Errorf("%w: %s: %q is not a number", runs.ErrInvalidInput, f.Name, raw)
			}
			if f.Kind == "integer" && n != math.Trunc(n) {
				return nil, fmt.Errorf("%w: %s: %q is not a whole number", runs.ErrInvalidInput, f.Name, raw)
			}
			answer[f.Name] = n
		case "json":
			v, err := DecodeJSON(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			answer[f.Name] = v
		default:
			answer[f.Name] = raw
		}
	}
	return answer, nil
}

// pendingViews builds the approval panel's interrupts: each value as
// indented JSON, plus a typed form when the value carries a schema.
func pendingViews(pending []engine.Interruption) []web.PendingView {
	out := make([]web.PendingView, 0, len(pending))
	for _, p := range pending {
		s, cut := runs.Preview(p.Value, PendingPreviewBytes)
		v := web.PendingView{ID: p.ID, Node: p.Node, Value: s, Truncated: cut}
		if schema, ok := answerSchema(p.Value); ok {
			v.Form = schemaForm(schema)
		}
		out = append(out, v)
	}
	return out
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

package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/superstep-dev/superstep/models"
)

// Tool is a function a model may call. NewTool builds one from a Go
// function; implement the interface to build one from a schema of your
// own.
type Tool interface {
	// Spec is what a ChatModel binds: name, description and the JSON
	// Schema of the arguments.
	Spec() models.ToolSpec
	// Invoke checks args against the tool's schema and runs it. Arguments
	// that do not fit are an *ArgumentError, which ToolNode turns into an
	// error message back to the model. The result is a string, a JSON-able
	// value, a models.Message of type tool, or an engine.Command (see
	// ToolNode).
	Invoke(ctx context.Context, args map[string]any) (any, error)
}

// ArgumentError says why a tool call's arguments were refused before the
// tool ran: upstream's ToolInvocationError. ToolNode answers it with an
// error ToolMessage by default, so the model can correct itself.
type ArgumentError struct {
	Tool string
	Args map[string]any
	// Problems lists each thing wrong, as "field: what".
	Problems []string
}

// Error is upstream's TOOL_INVOCATION_ERROR_TEMPLATE with the arguments
// in JSON.
func (e *ArgumentError) Error() string {
	args, _ := json.Marshal(e.Args)
	return fmt.Sprintf("Error invoking tool '%s' with kwargs %s with error:\n %s\n Please fix the error and try again.",
		e.Tool, args, strings.Join(e.Problems, "\n "))
}

// ErrInvalidTool is wrapped by NewTool's errors: a name or argument type
// that cannot make a tool.
var ErrInvalidTool = errors.New("agents: invalid tool")

type funcTool[Args any] struct {
	spec     models.ToolSpec
	required []string
	enums    map[string][]any
	fn       func(ctx context.Context, args Args) (any, error)
}

// NewTool makes a tool of fn. The JSON Schema of its arguments is derived
// from Args, a struct, with github.com/invopop/jsonschema: json tags name
// the properties, a field without omitempty is required, and jsonschema
// tags add descriptions, enums and the rest
// (`jsonschema:"description=City name,enum=c,enum=f"`). Before fn runs,
// the model's arguments are decoded strictly into Args: an unknown
// property, a missing required one, a value of the wrong type or outside
// its enum is an *ArgumentError naming each problem.
func NewTool[Args any](name, description string, fn func(ctx context.Context, args Args) (any, error)) (Tool, error) {
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return nil, fmt.Errorf("%w: name %q must be non-empty without spaces", ErrInvalidTool, name)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: tool %q has a nil function", ErrInvalidTool, name)
	}
	typ := reflect.TypeFor[Args]()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: tool %q: arguments must be a struct, got %s", ErrInvalidTool, name, typ)
	}
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	schema := r.ReflectFromType(typ)
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: tool %q: schema: %v", ErrInvalidTool, name, err)
	}
	params := map[string]any{}
	if err := json.Unmarshal(b, &params); err != nil {
		return nil, fmt.Errorf("%w: tool %q: schema: %v", ErrInvalidTool, name, err)
	}
	delete(params, "$schema")
	delete(params, "$id")
	if _, ok := params["properties"]; !ok {
		params["properties"] = map[string]any{} // providers want an object schema with properties
	}
	t := &funcTool[Args]{
		spec:  models.ToolSpec{Name: name, Description: description, Parameters: params},
		fn:    fn,
		enums: map[string][]any{},
	}
	if req, ok := params["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				t.required = append(t.required, s)
			}
		}
	}
	if props, ok := params["properties"].(map[string]any); ok {
		for k, p := range props {
			if pm, ok := p.(map[string]any); ok {
				if e, ok := pm["enum"].([]any); ok {
					t.enums[k] = e
				}
			}
		}
	}
	return t, nil
}

func (t *funcTool[Args]) Spec() models.ToolSpec { return t.spec }

func (t *funcTool[Args]) Invoke(ctx context.Context, args map[string]any) (any, error) {
	a, err := t.decode(args)
	if err != nil {
		return nil, err
	}
	return t.fn(ctx, a)
}

// decode checks args and decodes them into Args, collecting every
// problem it can name.
func (t *funcTool[Args]) decode(args map[string]any) (Args, error) {
	var a Args
	aerr := &ArgumentError{Tool: t.spec.Name, Args: args}
	for _, r := range t.required {
		if _, ok := args[r]; !ok {
			aerr.Problems = append(aerr.Problems, r+": field required")
		}
	}
	keys := make([]string, 0, len(t.enums))
	for k := range t.enums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := args[k]
		if !ok {
			continue
		}
		if !slices.ContainsFunc(t.enums[k], func(e any) bool { return reflect.DeepEqual(e, v) }) {
			want, _ := json.Marshal(t.enums[k])
			aerr.Problems = append(aerr.Problems, fmt.Sprintf("%s: must be one of %s", k, want))
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		aerr.Problems = append(aerr.Problems, err.Error())
		return a, aerr
	}
	if args == nil {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		aerr.Problems = append(aerr.Problems, decodeProblem(err))
	}
	if len(aerr.Problems) > 0 {
		return a, aerr
	}
	return a, nil
}

// decodeProblem says what encoding/json refused, as "field: what".
func decodeProblem(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		field := ute.Field
		if field == "" {
			field = "(arguments)"
		}
		return fmt.Sprintf("%s: expected %s, got %s", field, ute.Type, ute.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return strings.Trim(f, `"`) + ": extra inputs are not permitted"
	}
	return strings.TrimPrefix(msg, "json: ")
}

// ReturnDirect marks t so that the ReAct agent ends the run after it
// runs, with its ToolMessage as the last message (upstream's
// return_direct=True).
func ReturnDirect(t Tool) Tool { return returnDirectTool{t} }

type returnDirectTool struct{ Tool }

func (returnDirectTool) returnDirect() bool { return true }

func isReturnDirect(t Tool) bool {
	r, ok := t.(interface{ returnDirect() bool })
	return ok && r.returnDirect()
}

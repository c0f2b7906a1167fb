package localprovider

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
)

// checkObjects walks a JSON schema and calls check on every object schema
// (type "object", or with properties) with its path, stopping at the
// first complaint. It follows properties, items, anyOf, allOf, oneOf,
// $defs and definitions, as structured outputs do.
func checkObjects(schema any, path string, check func(obj map[string]any, path string) string) string {
	s, ok := schema.(map[string]any)
	if !ok {
		return ""
	}
	_, hasProps := s["properties"]
	if s["type"] == "object" || hasProps {
		if msg := check(s, path); msg != "" {
			return msg
		}
	}
	for _, key := range []string{"properties", "$defs", "definitions"} {
		m, _ := s[key].(map[string]any)
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if msg := checkObjects(m[k], path+"/"+key+"/"+k, check); msg != "" {
				return msg
			}
		}
	}
	if msg := checkObjects(s["items"], path+"/items", check); msg != "" {
		return msg
	}
	for _, key := range []string{"anyOf", "allOf", "oneOf"} {
		l, _ := s[key].([]any)
		for i, v := range l {
			if msg := checkObjects(v, fmt.Sprintf("%s/%s/%d", path, key, i), check); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// closedObjects is the rule both APIs' strict structured outputs share:
// every object schema sets additionalProperties to false.
func closedObjects(obj map[string]any, _ string) bool {
	return obj["additionalProperties"] == false
}

// validateAnthropicOutput checks output_config.format as the Messages API
// does: a json_schema format with a schema whose objects are all closed.
func validateAnthropicOutput(oc *AnthropicOutputConfig) string {
	if oc == nil || oc.Format == nil {
		return ""
	}
	f := oc.Format
	switch {
	case f.Type != "json_schema":
		return fmt.Sprintf("output_config.format.type: Input should be 'json_schema', not %q", f.Type)
	case f.Schema == nil:
		return "output_config.format.schema: Field required"
	}
	return checkObjects(f.Schema, "", func(obj map[string]any, path string) string {
		if !closedObjects(obj, path) {
			return fmt.Sprintf("output_config.format.schema: For 'object' type, 'additionalProperties' must be explicitly set to false (at %q)", orDefault(path, "/"))
		}
		return ""
	})
}

// schemaName is what OpenAI accepts as a response_format name.
var schemaName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// validateOpenAIResponseFormat checks response_format as Chat Completions
// does: text, json_object, or json_schema with a valid name and a schema,
// and, when strict, every object closed with every property required.
func validateOpenAIResponseFormat(rf *OpenAIResponseFormat) (msg, param string) {
	if rf == nil {
		return "", ""
	}
	switch rf.Type {
	case "text", "json_object":
		return "", ""
	case "json_schema":
	default:
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text', 'json_object', and 'json_schema'.", rf.Type), "response_format.type"
	}
	js := rf.JSONSchema
	switch {
	case js == nil:
		return "Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema"
	case !schemaName.MatchString(js.Name):
		return fmt.Sprintf("Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters, got %q.", js.Name), "response_format.json_schema.name"
	case js.Strict == nil || !*js.Strict:
		return "", ""
	}
	msg = checkObjects(js.Schema, "", func(obj map[string]any, path string) string {
		ctx := fmt.Sprintf("Invalid schema for response_format '%s': In context=(%s), ", js.Name, path)
		if !closedObjects(obj, path) {
			return ctx + "'additionalProperties' is required to be supplied and to be false."
		}
		props, _ := obj["properties"].(map[string]any)
		required, _ := obj["required"].([]any)
		var missing []string
		for k := range props {
			if !slices.Contains(required, any(k)) {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Sprintf("%s'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", ctx, missing[0])
		}
		return ""
	})
	if msg != "" {
		return msg, "response_format"
	}
	return "", ""
}

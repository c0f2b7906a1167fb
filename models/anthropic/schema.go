package anthropic

// closedSchema is a copy of a structured-output schema with
// additionalProperties: false added to every object schema that does not
// say: the Messages API refuses an object schema without it (an object
// that does say otherwise is left for the API to refuse). It follows
// properties, items, anyOf, allOf, oneOf, $defs and definitions.
func closedSchema(schema map[string]any) map[string]any {
	out, _ := closeObjects(schema).(map[string]any)
	return out
}

func closeObjects(v any) any {
	switch s := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(s)+1)
		for k, v := range s {
			switch k {
			case "properties", "$defs", "definitions":
				if m, ok := v.(map[string]any); ok {
					c := make(map[string]any, len(m))
					for name, sub := range m {
						c[name] = closeObjects(sub)
					}
					v = c
				}
			case "items", "anyOf", "allOf", "oneOf":
				v = closeObjects(v)
			}
			out[k] = v
		}
		if _, hasProps := s["properties"]; s["type"] == "object" || hasProps {
			if _, set := s["additionalProperties"]; !set {
				out["additionalProperties"] = false
			}
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, sub := range s {
			out[i] = closeObjects(sub)
		}
		return out
	}
	return v
}

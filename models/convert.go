package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// UnmarshalJSON reads a message in LangChain's dict form ("type") or as
// an OpenAI-style role dict ("role": "user", "assistant", "system",
// "developer", "tool"), as upstream's convert_to_messages does. OpenAI
// tool calls (`{"id","type":"function","function":{"name","arguments"}}`)
// become LangChain tool calls. Fields the type does not know are kept in
// Extra. A JSON string reads as a human message, as convert_to_messages
// reads a str, so `["hi", {"role":"assistant",...}]` is a []Message.
func (m *Message) UnmarshalJSON(data []byte) error {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(t, &s); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		*m = Human(s)
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return fmt.Errorf("%w: a message must be a JSON object or a string, got %s", ErrInvalidMessage, abbreviate(bytes.TrimSpace(data)))
	}
	out, err := messageFromFields(raw)
	if err != nil {
		return err
	}
	*m = out
	return nil
}

func messageFromFields(raw map[string]json.RawMessage) (Message, error) {
	var m Message
	kind, key := "", "role"
	rawKind, ok := raw["role"]
	if !ok {
		rawKind, ok = raw["type"]
		key = "type"
	}
	if !ok {
		return m, fmt.Errorf("%w: a message dict needs a \"type\" or \"role\" key", ErrInvalidMessage)
	}
	if err := json.Unmarshal(rawKind, &kind); err != nil {
		return m, fmt.Errorf("%w: %q must be a string, got %s", ErrInvalidMessage, key, abbreviate(rawKind))
	}
	delete(raw, key)
	if key == "role" {
		// A role dict may also carry LangChain's "type"; the role decides.
		delete(raw, "type")
	}
	switch kind {
	case "human", "user":
		m.Type = TypeHuman
	case "ai", "assistant":
		m.Type = TypeAI
	case TypeAIChunk:
		m.Type = TypeAIChunk
	case "system":
		m.Type = TypeSystem
	case "developer":
		m.Type = TypeSystem
		m.AdditionalKwargs = map[string]any{"__openai_role__": "developer"}
	case "tool":
		m.Type = TypeTool
	case "remove":
		m.Type = TypeRemove
	default:
		return m, fmt.Errorf("%w: unexpected message type %q: use one of human, user, ai, assistant, AIMessageChunk, system, developer, tool or remove", ErrInvalidMessage, kind)
	}
	rawContent, hasContent := raw["content"]
	if !hasContent && m.Type != TypeRemove {
		return m, fmt.Errorf("%w: a %s message dict needs a \"content\" key", ErrInvalidMessage, kind)
	}
	if hasContent {
		if err := json.Unmarshal(rawContent, &m.Content); err != nil {
			return m, fmt.Errorf("%w: content: %w", ErrInvalidMessage, err)
		}
	}
	field := func(name string, dst any) error {
		v, ok := raw[name]
		if !ok {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%w: field %q: %w", ErrInvalidMessage, name, err)
		}
		return nil
	}
	object := func(name string) (map[string]any, error) {
		v, ok := raw[name]
		if !ok {
			return nil, nil
		}
		obj, err := decodeObject(v)
		if err != nil {
			return nil, fmt.Errorf("%w: field %q must be an object, got %s", ErrInvalidMessage, name, abbreviate(v))
		}
		return obj, nil
	}
	kw, err := object("additional_kwargs")
	if err != nil {
		return m, err
	}
	if len(kw) > 0 {
		if m.AdditionalKwargs == nil {
			m.AdditionalKwargs = map[string]any{}
		}
		for k, v := range kw {
			m.AdditionalKwargs[k] = v
		}
	}
	if m.ResponseMetadata, err = object("response_metadata"); err != nil {
		return m, err
	}
	if len(m.ResponseMetadata) == 0 {
		m.ResponseMetadata = nil
	}
	var name, id *string
	if err := field("name", &name); err != nil {
		return m, err
	}
	if err := field("id", &id); err != nil {
		return m, err
	}
	if name != nil {
		m.Name = *name
	}
	if id != nil {
		m.ID = *id
	}
	handled := map[string]bool{"content": true, "additional_kwargs": true, "response_metadata": true, "name": true, "id": true}

	switch m.Type {
	case TypeAI, TypeAIChunk:
		handled["tool_calls"], handled["invalid_tool_calls"], handled["usage_metadata"] = true, true, true
		if m.ToolCalls, err = readToolCalls(raw["tool_calls"]); err != nil {
			return m, err
		}
		var invalid []struct{ Name, Args, ID, Error *string }
		if err := field("invalid_tool_calls", &invalid); err != nil {
			return m, err
		}
		for _, c := range invalid {
			m.InvalidToolCalls = append(m.InvalidToolCalls, InvalidToolCall{Name: deref(c.Name), Args: deref(c.Args), ID: deref(c.ID), Error: deref(c.Error)})
		}
		if err := field("usage_metadata", &m.Usage); err != nil {
			return m, err
		}
		if m.Type == TypeAIChunk {
			handled["tool_call_chunks"], handled["chunk_position"] = true, true
			var chunks []struct {
				Name, Args, ID *string
				Index          *int
			}
			if err := field("tool_call_chunks", &chunks); err != nil {
				return m, err
			}
			for _, c := range chunks {
				m.ToolCallChunks = append(m.ToolCallChunks, ToolCallChunk{Name: deref(c.Name), Args: deref(c.Args), ID: deref(c.ID), Index: c.Index})
			}
			var pos *string
			if err := field("chunk_position", &pos); err != nil {
				return m, err
			}
			m.ChunkPosition = deref(pos)
			_, hasCalls := raw["tool_calls"]
			_, hasInvalid := raw["invalid_tool_calls"]
			if len(m.ToolCallChunks) > 0 && !hasCalls && !hasInvalid {
				// Upstream derives them when a chunk is built; a dict
				// that carries its own is kept as it is.
				m.ToolCalls, m.InvalidToolCalls = toolCallsFromChunks(m.ToolCallChunks)
			}
		}
	case TypeTool:
		handled["tool_call_id"], handled["status"], handled["artifact"] = true, true, true
		var callID, status *string
		if err := field("tool_call_id", &callID); err != nil {
			return m, err
		}
		if callID == nil {
			return m, fmt.Errorf("%w: a tool message needs a \"tool_call_id\"", ErrInvalidMessage)
		}
		m.ToolCallID = *callID
		if err := field("status", &status); err != nil {
			return m, err
		}
		m.Status = StatusSuccess
		if status != nil {
			if *status != StatusSuccess && *status != StatusError {
				return m, fmt.Errorf("%w: a tool message's status is \"success\" or \"error\", got %q", ErrInvalidMessage, *status)
			}
			m.Status = *status
		}
		if a, ok := raw["artifact"]; ok {
			if m.Artifact, err = decodeAny(a); err != nil {
				return m, fmt.Errorf("%w: field \"artifact\": %w", ErrInvalidMessage, err)
			}
		}
	}
	for k, v := range raw {
		if handled[k] {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]json.RawMessage{}
		}
		m.Extra[k] = append(json.RawMessage(nil), v...)
	}
	return m, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// readToolCalls reads LangChain tool calls and OpenAI ones (with a
// "function" holding the name and the arguments as a JSON string).
func readToolCalls(data json.RawMessage) ([]ToolCall, error) {
	if data == nil {
		return nil, nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("%w: field \"tool_calls\" must be a list of objects: %w", ErrInvalidMessage, err)
	}
	var calls []ToolCall
	for i, it := range items {
		var c ToolCall
		var id *string
		if v, ok := it["id"]; ok {
			if err := json.Unmarshal(v, &id); err != nil {
				return nil, fmt.Errorf("%w: tool call %d: id must be a string", ErrInvalidMessage, i)
			}
		}
		c.ID = deref(id)
		if fn, ok := it["function"]; ok {
			var f struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(fn, &f); err != nil {
				return nil, fmt.Errorf("%w: tool call %d: function: %w", ErrInvalidMessage, i, err)
			}
			c.Name = f.Name
			args := f.Arguments
			var s string
			if json.Unmarshal(args, &s) == nil {
				args = json.RawMessage(s)
			}
			if len(bytes.TrimSpace(args)) > 0 {
				obj, err := decodeObject(args)
				if err != nil {
					return nil, fmt.Errorf("%w: tool call %d (%s): arguments are not a JSON object: %w", ErrInvalidMessage, i, f.Name, err)
				}
				c.Args = obj
			}
		} else {
			if v, ok := it["name"]; ok {
				if err := json.Unmarshal(v, &c.Name); err != nil {
					return nil, fmt.Errorf("%w: tool call %d: name must be a string", ErrInvalidMessage, i)
				}
			}
			if v, ok := it["args"]; ok {
				obj, err := decodeObject(v)
				if err != nil {
					return nil, fmt.Errorf("%w: tool call %d (%s): args must be an object, got %s", ErrInvalidMessage, i, c.Name, abbreviate(v))
				}
				c.Args = obj
			}
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// ToMessages converts message-like values to messages, as upstream's
// convert_to_messages: a Message (or *Message), a string (a human
// message), a [2]string (role, text) pair, a map in dict or role form,
// json.RawMessage, or a slice of any of these. A non-slice value gives
// one message.
func ToMessages(v any) ([]Message, error) {
	switch x := v.(type) {
	case []Message:
		return append([]Message(nil), x...), nil
	case Message, *Message, string, [2]string, map[string]any, json.RawMessage:
		m, err := toMessage(x)
		if err != nil {
			return nil, err
		}
		return []Message{m}, nil
	case []any:
		out := make([]Message, 0, len(x))
		for i, e := range x {
			m, err := toMessage(e)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			out = append(out, m)
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("%w: nil is not a message", ErrInvalidMessage)
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		out := make([]Message, 0, rv.Len())
		for i := range rv.Len() {
			m, err := toMessage(rv.Index(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			out = append(out, m)
		}
		return out, nil
	}
	m, err := toMessage(v)
	if err != nil {
		return nil, err
	}
	return []Message{m}, nil
}

func toMessage(v any) (Message, error) {
	switch x := v.(type) {
	case Message:
		return x, nil
	case *Message:
		if x == nil {
			return Message{}, fmt.Errorf("%w: nil *Message", ErrInvalidMessage)
		}
		return *x, nil
	case string:
		return Human(x), nil
	case [2]string:
		return messageFromFields(map[string]json.RawMessage{"role": quote(x[0]), "content": quote(x[1])})
	case json.RawMessage:
		var m Message
		err := m.UnmarshalJSON(x)
		return m, err
	case map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return Message{}, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
		}
		var m Message
		err = m.UnmarshalJSON(b)
		return m, err
	}
	return Message{}, fmt.Errorf("%w: cannot use %T as a message (want a Message, a string, a [2]string role and text, or a dict)", ErrInvalidMessage, v)
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

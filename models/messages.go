package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"sort"
)

// The message types, as LangChain's `type` field spells them.
const (
	TypeHuman   = "human"
	TypeAI      = "ai"
	TypeAIChunk = "AIMessageChunk"
	TypeSystem  = "system"
	TypeTool    = "tool"
	TypeRemove  = "remove"
)

// RemoveAllID is the id of the RemoveMessage that clears the history in
// AddMessages (upstream's REMOVE_ALL_MESSAGES).
const RemoveAllID = "__remove_all__"

// Tool message statuses.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// ErrInvalidMessage is wrapped by every error about a value that is not a
// message: an unknown type, a field of the wrong JSON type, a dict without
// content.
var ErrInvalidMessage = errors.New("models: invalid message")

// Message is a LangChain message: HumanMessage, AIMessage, AIMessageChunk,
// SystemMessage, ToolMessage or RemoveMessage, told apart by Type. It
// marshals as the dict Python's LangChain writes (model_dump), which is
// what the Agent Server sends and LangGraph clients read:
//
//	{"content":"hi","additional_kwargs":{},"response_metadata":{},
//	 "type":"human","name":null,"id":"7aae…"}
//
// with, per type, the fields below. Empty Name and ID are null. Fields a
// type does not have are not written (and are ignored when set).
type Message struct {
	// Type is one of the Type constants.
	Type string
	// Content is the string or block-list content.
	Content Content
	// AdditionalKwargs holds provider extras (nil writes {}).
	AdditionalKwargs map[string]any
	// ResponseMetadata holds the provider's response data: model_name,
	// stop_reason... (nil writes {}).
	ResponseMetadata map[string]any
	// Name is the optional name of the author.
	Name string
	// ID identifies the message in a history: AddMessages replaces and
	// removes by it, and gives one to messages without.
	ID string

	// ToolCalls are an AI message's well-formed tool calls.
	ToolCalls []ToolCall
	// InvalidToolCalls are an AI message's tool calls whose arguments
	// did not parse as a JSON object.
	InvalidToolCalls []InvalidToolCall
	// Usage is an AI message's token usage; nil is null (not reported).
	Usage *UsageMetadata
	// ToolCallChunks are an AIMessageChunk's streamed tool call pieces.
	ToolCallChunks []ToolCallChunk
	// ChunkPosition is "last" on an AIMessageChunk that ends a stream.
	ChunkPosition string

	// ToolCallID is the id of the tool call a tool message answers.
	ToolCallID string
	// Status is a tool message's "success" (written when empty) or "error".
	Status string
	// Artifact is a tool message's output not sent to the model.
	Artifact any

	// Extra keeps top-level fields this type does not know ("example"
	// from older cores, a provider's own), written back after the others.
	Extra map[string]json.RawMessage
}

// MessageID returns the message's id; the engine finds messages in node
// outputs through this method.
func (m Message) MessageID() string { return m.ID }

// WithMissingID returns m with a new uuid when it has no id (and true),
// m itself otherwise. The engine calls it on every message a node writes
// to a state key, before the write is streamed or saved, as upstream's
// ensure_message_ids does: the "messages" stream, the saved writes and
// the state then show one id for the message.
func (m Message) WithMissingID() (any, bool) {
	if m.ID != "" {
		return m, false
	}
	m.ID = uuid.NewString()
	return m, true
}

// Text returns the text of the content (see Content.String).
func (m Message) Text() string { return m.Content.String() }

// Human returns a human message.
func Human(text string) Message { return Message{Type: TypeHuman, Content: Text(text)} }

// System returns a system message.
func System(text string) Message { return Message{Type: TypeSystem, Content: Text(text)} }

// AI returns an AI message with text content.
func AI(text string) Message { return Message{Type: TypeAI, Content: Text(text)} }

// AIChunk returns an AIMessageChunk with text content, as a provider
// streams them.
func AIChunk(text string) Message { return Message{Type: TypeAIChunk, Content: Text(text)} }

// AIWithToolCalls returns an AI message with text (may be empty) and tool
// calls.
func AIWithToolCalls(text string, calls ...ToolCall) Message {
	return Message{Type: TypeAI, Content: Text(text), ToolCalls: calls}
}

// ToolResult returns a successful tool message answering the call callID.
func ToolResult(callID string, content Content) Message {
	return Message{Type: TypeTool, Content: content, ToolCallID: callID, Status: StatusSuccess}
}

// Remove returns a RemoveMessage: written to a messages key, it deletes
// the message with this id.
func Remove(id string) Message { return Message{Type: TypeRemove, ID: id} }

// RemoveAll returns the RemoveMessage that clears the history: only what
// follows it in the same write is kept.
func RemoveAll() Message { return Remove(RemoveAllID) }

// ToolCall is a tool call of an AI message.
type ToolCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	ID   string         `json:"id"` // "" is null
}

// InvalidToolCall is a tool call whose arguments are not a JSON object.
type InvalidToolCall struct {
	Name  string // "" is null, as for the other fields
	Args  string
	ID    string
	Error string
}

// ToolCallChunk is a piece of a streamed tool call; chunks with the same
// Index are concatenated by MergeChunks.
type ToolCallChunk struct {
	Name  string // "" is null, as for Args and ID
	Args  string
	ID    string
	Index *int // nil is null
}

// UsageMetadata is LangChain's usage_metadata. InputTokens is the true
// total of the prompt, cache reads and writes included.
type UsageMetadata struct {
	InputTokens        int                 `json:"input_tokens"`
	OutputTokens       int                 `json:"output_tokens"`
	TotalTokens        int                 `json:"total_tokens"`
	InputTokenDetails  *InputTokenDetails  `json:"input_token_details,omitempty"`
	OutputTokenDetails *OutputTokenDetails `json:"output_token_details,omitempty"`
}

// InputTokenDetails breaks input tokens down. A nil field is a count the
// provider did not report, which is not the same as 0.
type InputTokenDetails struct {
	Audio         *int `json:"audio,omitempty"`
	CacheCreation *int `json:"cache_creation,omitempty"`
	CacheRead     *int `json:"cache_read,omitempty"`
	// Ephemeral5m and Ephemeral1h split Anthropic's cache writes by TTL.
	Ephemeral5m *int `json:"ephemeral_5m_input_tokens,omitempty"`
	Ephemeral1h *int `json:"ephemeral_1h_input_tokens,omitempty"`
	// Extra holds counts under other keys.
	Extra map[string]int `json:"-"`
}

// OutputTokenDetails breaks output tokens down; nil is not reported.
type OutputTokenDetails struct {
	Audio     *int `json:"audio,omitempty"`
	Reasoning *int `json:"reasoning,omitempty"`
	// Extra holds counts under other keys.
	Extra map[string]int `json:"-"`
}

// Int returns a pointer to n, for the token detail fields.
func Int(n int) *int { return &n }

// MarshalJSON writes the known counts and the Extra ones.
func (d InputTokenDetails) MarshalJSON() ([]byte, error) {
	type plain InputTokenDetails
	return withExtraInts(plain(d), d.Extra)
}

// UnmarshalJSON reads the known counts and keeps the others in Extra.
func (d *InputTokenDetails) UnmarshalJSON(data []byte) error {
	type plain InputTokenDetails
	var p plain
	extra, err := readWithExtraInts(data, &p, "audio", "cache_creation", "cache_read",
		"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
	if err != nil {
		return fmt.Errorf("input_token_details: %w", err)
	}
	*d = InputTokenDetails(p)
	d.Extra = extra
	return nil
}

// MarshalJSON writes the known counts and the Extra ones.
func (d OutputTokenDetails) MarshalJSON() ([]byte, error) {
	type plain OutputTokenDetails
	return withExtraInts(plain(d), d.Extra)
}

// UnmarshalJSON reads the known counts and keeps the others in Extra.
func (d *OutputTokenDetails) UnmarshalJSON(data []byte) error {
	type plain OutputTokenDetails
	var p plain
	extra, err := readWithExtraInts(data, &p, "audio", "reasoning")
	if err != nil {
		return fmt.Errorf("output_token_details: %w", err)
	}
	*d = OutputTokenDetails(p)
	d.Extra = extra
	return nil
}

func withExtraInts(known any, extra map[string]int) ([]byte, error) {
	b, err := json.Marshal(known)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

func readWithExtraInts(data []byte, known any, names ...string) (map[string]int, error) {
	if err := json.Unmarshal(data, known); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	for _, n := range names {
		delete(all, n)
	}
	var extra map[string]int
	for k, raw := range all {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("%s must be an integer count, got %s", k, abbreviate(raw))
		}
		if extra == nil {
			extra = map[string]int{}
		}
		extra[k] = n
	}
	return extra, nil
}

// knownFields lists the fields each type writes after the base ones, in
// Python's model_dump order.
var knownFields = map[string][]string{
	TypeHuman:   nil,
	TypeSystem:  nil,
	TypeRemove:  nil,
	TypeAI:      {"tool_calls", "invalid_tool_calls", "usage_metadata"},
	TypeAIChunk: {"tool_calls", "invalid_tool_calls", "usage_metadata", "tool_call_chunks", "chunk_position"},
	TypeTool:    {"tool_call_id", "artifact", "status"},
}

var baseFields = []string{"content", "additional_kwargs", "response_metadata", "type", "name", "id"}

// MarshalJSON writes LangChain's dict form of the message, fields in
// Python's order.
func (m Message) MarshalJSON() ([]byte, error) {
	fields, ok := knownFields[m.Type]
	if !ok {
		return nil, fmt.Errorf("%w: unknown type %q (want human, ai, AIMessageChunk, system, tool or remove)", ErrInvalidMessage, m.Type)
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	write := func(key string, v any) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		buf.Write(k)
		buf.WriteByte(':')
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("message field %s: %w", key, err)
		}
		buf.Write(b)
		return nil
	}
	for _, f := range append(baseFields[:len(baseFields):len(baseFields)], fields...) {
		var err error
		switch f {
		case "content":
			err = write(f, m.Content)
		case "additional_kwargs":
			err = write(f, emptyMap(m.AdditionalKwargs))
		case "response_metadata":
			err = write(f, emptyMap(m.ResponseMetadata))
		case "type":
			err = write(f, m.Type)
		case "name":
			err = write(f, nullable(m.Name))
		case "id":
			err = write(f, nullable(m.ID))
		case "tool_calls":
			err = write(f, toolCallsJSON(m.ToolCalls))
		case "invalid_tool_calls":
			err = write(f, invalidToolCallsJSON(m.InvalidToolCalls))
		case "usage_metadata":
			err = write(f, m.Usage)
		case "tool_call_chunks":
			err = write(f, toolCallChunksJSON(m.ToolCallChunks))
		case "chunk_position":
			err = write(f, nullable(m.ChunkPosition))
		case "tool_call_id":
			err = write(f, m.ToolCallID)
		case "artifact":
			err = write(f, m.Artifact)
		case "status":
			s := m.Status
			if s == "" {
				s = StatusSuccess
			}
			err = write(f, s)
		}
		if err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		if !isField(m.Type, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := write(k, m.Extra[k]); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func isField(typ, key string) bool {
	for _, f := range baseFields {
		if f == key {
			return true
		}
	}
	for _, f := range knownFields[typ] {
		if f == key {
			return true
		}
	}
	return false
}

func emptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

type toolCallJSON struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	ID   any            `json:"id"`
	Type string         `json:"type"`
}

func toolCallsJSON(calls []ToolCall) []toolCallJSON {
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallJSON{Name: c.Name, Args: emptyMap(c.Args), ID: nullable(c.ID), Type: "tool_call"}
	}
	return out
}

type invalidToolCallJSON struct {
	Name  any    `json:"name"`
	Args  any    `json:"args"`
	ID    any    `json:"id"`
	Error any    `json:"error"`
	Type  string `json:"type"`
}

func invalidToolCallsJSON(calls []InvalidToolCall) []invalidToolCallJSON {
	out := make([]invalidToolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = invalidToolCallJSON{Name: nullable(c.Name), Args: nullable(c.Args), ID: nullable(c.ID), Error: nullable(c.Error), Type: "invalid_tool_call"}
	}
	return out
}

type toolCallChunkJSON struct {
	Name  any    `json:"name"`
	Args  any    `json:"args"`
	ID    any    `json:"id"`
	Index *int   `json:"index"`
	Type  string `json:"type"`
}

func toolCallChunksJSON(chunks []ToolCallChunk) []toolCallChunkJSON {
	out := make([]toolCallChunkJSON, len(chunks))
	for i, c := range chunks {
		out[i] = toolCallChunkJSON{Name: nullable(c.Name), Args: nullable(c.Args), ID: nullable(c.ID), Index: c.Index, Type: "tool_call_chunk"}
	}
	return out
}

// ErrUnknownMessageID is the error of a RemoveMessage whose id is not in
// the history. It wraps ErrInvalidMessage.
var ErrUnknownMessageID = fmt.Errorf("%w: unknown message id", ErrInvalidMessage)

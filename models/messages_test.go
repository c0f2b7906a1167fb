package models

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestMessageJSON writes each type by hand in Python's dict form. Field
// names and order follow the Agent Server capture in LangGraph's
// libs/sdk-py/tests/fixtures/response.txt: human (content, additional_kwargs,
// response_metadata, type, name, id), ai (… tool_calls with "type":
// "tool_call", invalid_tool_calls, usage_metadata with input_token_details
// cache_read/cache_creation), and content as a block list with Anthropic's
// tool_use block keeping its "index". The fixture carries "example": false
// from older cores; we do not write it, but keep it when read (Extra).
// Tool, chunk and remove fields follow langchain-core's ToolMessage,
// AIMessageChunk and RemoveMessage model_dump.
func TestMessageJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		msg  Message
		want string
	}{
		{"human", Message{Type: TypeHuman, Content: Text("hi"), ID: "7aae7cba-94b6-4218-8747-4f0f66a34000"},
			`{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","name":null,"id":"7aae7cba-94b6-4218-8747-4f0f66a34000"}`},
		{"system", System("be brief"),
			`{"content":"be brief","additional_kwargs":{},"response_metadata":{},"type":"system","name":null,"id":null}`},
		{"ai with tool_use blocks", Message{
			Type:             TypeAI,
			Content:          Blocks(Block{"id": "toolu_011AD2TbtpQF3BRbxYAyyoKZ", "input": map[string]any{}, "name": "Plan", "type": "tool_use", "index": 0}),
			ResponseMetadata: map[string]any{"model_name": "claude-3-5-haiku-20241022"},
			ID:               "run--27fb1bde-8c18-4056-8549-baa92acf003c",
			ToolCalls:        []ToolCall{{Name: "Plan", Args: map[string]any{}, ID: "toolu_011AD2TbtpQF3BRbxYAyyoKZ"}},
		}, `{"content":[{"id":"toolu_011AD2TbtpQF3BRbxYAyyoKZ","index":0,"input":{},"name":"Plan","type":"tool_use"}],"additional_kwargs":{},"response_metadata":{"model_name":"claude-3-5-haiku-20241022"},"type":"ai","name":null,"id":"run--27fb1bde-8c18-4056-8549-baa92acf003c","tool_calls":[{"name":"Plan","args":{},"id":"toolu_011AD2TbtpQF3BRbxYAyyoKZ","type":"tool_call"}],"invalid_tool_calls":[],"usage_metadata":null}`},
		{"ai with usage", Message{
			Type: TypeAI, Content: Text("Hello!"), ID: "run--824c9553-e992-40d0-a7a4-1396c088a28c",
			ResponseMetadata: map[string]any{"model_name": "claude-3-5-haiku-20241022", "stop_reason": "end_turn", "stop_sequence": nil},
			Usage:            &UsageMetadata{InputTokens: 3003, OutputTokens: 44, TotalTokens: 3047, InputTokenDetails: &InputTokenDetails{CacheCreation: Int(0), CacheRead: Int(0)}},
		}, `{"content":"Hello!","additional_kwargs":{},"response_metadata":{"model_name":"claude-3-5-haiku-20241022","stop_reason":"end_turn","stop_sequence":null},"type":"ai","name":null,"id":"run--824c9553-e992-40d0-a7a4-1396c088a28c","tool_calls":[],"invalid_tool_calls":[],"usage_metadata":{"input_tokens":3003,"output_tokens":44,"total_tokens":3047,"input_token_details":{"cache_creation":0,"cache_read":0}}}`},
		{"ai invalid tool call", Message{Type: TypeAI, InvalidToolCalls: []InvalidToolCall{{Name: "f", Args: "[1", ID: "c"}}},
			`{"content":"","additional_kwargs":{},"response_metadata":{},"type":"ai","name":null,"id":null,"tool_calls":[],"invalid_tool_calls":[{"name":"f","args":"[1","id":"c","error":null,"type":"invalid_tool_call"}],"usage_metadata":null}`},
		{"chunk", Message{Type: TypeAIChunk, Content: Text(""), ID: "msg_1", ToolCallChunks: []ToolCallChunk{{Name: "search", Args: `{"q"`, ID: "call_1", Index: Int(0)}}, ChunkPosition: "last"},
			`{"content":"","additional_kwargs":{},"response_metadata":{},"type":"AIMessageChunk","name":null,"id":"msg_1","tool_calls":[],"invalid_tool_calls":[],"usage_metadata":null,"tool_call_chunks":[{"name":"search","args":"{\"q\"","id":"call_1","index":0,"type":"tool_call_chunk"}],"chunk_position":"last"}`},
		{"tool", ToolResult("call_1", Text("42")),
			`{"content":"42","additional_kwargs":{},"response_metadata":{},"type":"tool","name":null,"id":null,"tool_call_id":"call_1","artifact":null,"status":"success"}`},
		{"remove", Remove("m1"),
			`{"content":"","additional_kwargs":{},"response_metadata":{},"type":"remove","name":null,"id":"m1"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(c.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			var back Message
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != c.want {
				t.Fatalf("round trip changed it:\n%s", again)
			}
		})
	}
}

func TestMessageJSONKeepsUnknownFields(t *testing.T) {
	t.Parallel()
	// "example" comes from the fixture's older core; "cache_control" and
	// "citations" are Anthropic block fields we do not model.
	in := `{"content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"},"citations":[{"n":12345678901234567890}]}],"additional_kwargs":{},"response_metadata":{},"type":"human","name":null,"id":"1","example":false}`
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(m)
	var a, b any
	_ = json.Unmarshal([]byte(in), &a)
	_ = json.Unmarshal(out, &b)
	if !strings.Contains(string(out), "12345678901234567890") || !reflect.DeepEqual(a, b) {
		t.Fatalf("lost something:\n%s\n%s", in, out)
	}
}

func TestRoleDicts(t *testing.T) {
	t.Parallel()
	got, err := ToMessages([]any{
		map[string]any{"role": "developer", "content": "rules"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": `{"a":1}`}}}},
		[2]string{"user", "hi"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Type != TypeSystem || got[0].AdditionalKwargs["__openai_role__"] != "developer" {
		t.Fatalf("developer: %+v", got[0])
	}
	if got[1].Type != TypeAI || len(got[1].ToolCalls) != 1 || got[1].ToolCalls[0].Name != "f" || got[1].ToolCalls[0].Args["a"] != json.Number("1") {
		t.Fatalf("assistant: %+v", got[1])
	}
	if got[2].Type != TypeHuman || got[2].Text() != "hi" {
		t.Fatalf("pair: %+v", got[2])
	}
}

func TestBadMessages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
	}{
		{`{"type":"robot","content":"x"}`, `unexpected message type "robot"`},
		{`{"content":"x"}`, `needs a "type" or "role"`},
		{`{"role":"user"}`, `needs a "content" key`},
		{`{"type":"human","content":42}`, `content must be a string or a list of blocks`},
		{`{"type":"human","content":["ok", 3]}`, `content block 1`},
		{`{"type":"human","content":"x","id":7}`, `field "id"`},
		{`{"type":"ai","content":"x","tool_calls":[{"name":"f","args":"{}"}]}`, `args must be an object`},
		{`{"type":"ai","content":"x","usage_metadata":{"input_tokens":"many"}}`, `field "usage_metadata"`},
		{`{"type":"tool","content":"x"}`, `needs a "tool_call_id"`},
		{`{"type":"tool","content":"x","tool_call_id":"c","status":"meh"}`, `"success" or "error"`},
		{`{"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"f","arguments":"{oops"}}]}`, `arguments are not a JSON object`},
		{`[1]`, `must be a JSON object`},
	} {
		var m Message
		err := json.Unmarshal([]byte(c.in), &m)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%s: got %v, want an ErrInvalidMessage saying %q", c.in, err, c.want)
		}
	}
	if _, err := json.Marshal(Message{Type: "robot"}); err == nil || !strings.Contains(err.Error(), "unknown type") {
		t.Errorf("marshal of an unknown type: %v", err)
	}
	if _, err := ToMessages(42); err == nil || !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("ToMessages(42): %v", err)
	}
}

package models

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParsePartialJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"a": 1}`, `{"a":1}`},
		{`{"q": "lang`, `{"q":"lang"}`},
		{`{"q": "a\`, `{"q":"a"}`},
		{`{"list": [1, 2`, `{"list":[1,2]}`},
		{`{"a": 1, "b`, `{"a":1}`},
		{`{"a": 1,`, `{"a":1}`},
		{`{"a": tr`, `{}`},
		{"{\"s\": \"line\nbreak\"}", `{"s":"line\nbreak"}`},
		{`[{"x": {"y": [`, `[{"x":{"y":[]}}]`},
		{`{"big": 12345678901234567890}`, `{"big":12345678901234567890}`},
	} {
		v, err := ParsePartialJSON(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`{"a": 1]`, `]`, `nope`} {
		if _, err := ParsePartialJSON(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestMergeChunksDicts(t *testing.T) {
	t.Parallel()
	a := AIChunk("")
	a.ID = "run-1"
	a.ResponseMetadata = map[string]any{"model_name": "m", "id": "x", "n": 2, "same": 3, "index": 0, "nested": map[string]any{"s": "a"}}
	b := AIChunk("")
	b.ID = "msg_provider"
	b.ResponseMetadata = map[string]any{"model_name": "", "id": "x", "n": 5, "same": 3, "index": 1, "nested": map[string]any{"s": "b"}, "stop_reason": "end_turn"}
	b.ChunkPosition = "last"
	got, err := MergeChunks(a, b)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got.ResponseMetadata)
	if string(js) != `{"id":"x","index":1,"model_name":"m","n":7,"nested":{"s":"ab"},"same":3,"stop_reason":"end_turn"}` {
		t.Fatalf("response_metadata: %s", js)
	}
	if got.ID != "msg_provider" || got.ChunkPosition != "last" {
		t.Fatalf("id %q position %q", got.ID, got.ChunkPosition)
	}
	if !reflect.DeepEqual(a.ResponseMetadata["nested"], map[string]any{"s": "a"}) {
		t.Fatal("left modified")
	}
	b.ResponseMetadata = map[string]any{"n": "five"}
	if _, err := MergeChunks(a, b); err == nil {
		t.Fatal("want a type mismatch error")
	}
	if _, err := MergeChunks(AI("x"), AIChunk("y")); err == nil {
		t.Fatal("want an error for a non-chunk")
	}
}

func TestMergeChunksMixedContent(t *testing.T) {
	t.Parallel()
	got, err := MergeChunks(AIChunk("Hi"), Message{Type: TypeAIChunk, Content: Blocks(Block{"type": "text", "text": "!", "index": 0})})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(got.Content)
	if string(js) != `[{"text":"Hi","type":"text"},{"index":0,"text":"!","type":"text"}]` {
		t.Fatalf("content: %s", js)
	}
	final := ToMessage(got)
	if final.Type != TypeAI || final.ToolCallChunks != nil {
		t.Fatalf("ToMessage: %+v", final)
	}
}

func TestUsageUnknownIsNotZero(t *testing.T) {
	t.Parallel()
	a := AIChunk("")
	a.Usage = &UsageMetadata{InputTokens: 5, TotalTokens: 5, InputTokenDetails: &InputTokenDetails{CacheRead: Int(3)}}
	b := AIChunk("")
	b.Usage = &UsageMetadata{OutputTokens: 2, TotalTokens: 2, InputTokenDetails: &InputTokenDetails{Extra: map[string]int{"x": 1}}}
	got, err := MergeChunks(a, b)
	if err != nil {
		t.Fatal(err)
	}
	d := got.Usage.InputTokenDetails
	if got.Usage.TotalTokens != 7 || *d.CacheRead != 3 || d.CacheCreation != nil || d.Extra["x"] != 1 || got.Usage.OutputTokenDetails != nil {
		t.Fatalf("usage: %+v %+v", got.Usage, d)
	}
	js, _ := json.Marshal(got.Usage)
	if string(js) != `{"input_tokens":5,"output_tokens":2,"total_tokens":7,"input_token_details":{"cache_read":3,"x":1}}` {
		t.Fatalf("usage JSON: %s", js)
	}
}

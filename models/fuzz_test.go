package models

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMessageJSON checks that any message we read is written back
// losslessly: reading our output gives the same message, and writing it
// again gives the same bytes.
func FuzzMessageJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":"hi","additional_kwargs":{},"response_metadata":{},"type":"human","name":null,"id":"1","example":false}`,
		`{"content":[{"type":"tool_use","id":"t","name":"Plan","input":{"a":[1,2.5,"x"]},"index":0,"partial_json":"{\"a"}],"type":"AIMessageChunk","tool_call_chunks":[{"name":"Plan","args":"{\"a","id":"t","index":0}],"usage_metadata":{"input_tokens":1,"output_tokens":2,"total_tokens":3,"input_token_details":{"cache_read":0,"ephemeral_5m_input_tokens":4}}}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"type":"tool","content":"x","tool_call_id":"c","status":"error","artifact":{"k":[1]}}`,
		`{"type":"remove","id":"__remove_all__"}`,
		`{"type":"ai","content":"","invalid_tool_calls":[{"name":"f","args":"[","id":null,"error":"bad"}],"response_metadata":{"model_name":"m"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		first, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal of a message we read: %v", err)
		}
		var back Message
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("reading our own output %s: %v", first, err)
		}
		second, err := json.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("not lossless:\n%s\n%s", first, second)
		}
	})
}

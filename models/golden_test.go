package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The golden files are recorded from LangGraph.js by
// testdata/golden/js/record.mjs (make golden/record); these tests replay
// them without npm.

type goldenFile[C any] struct {
	Cases []C `json:"cases"`
}

type addCase struct {
	Name  string          `json:"name"`
	Left  json.RawMessage `json:"left"`
	Right json.RawMessage `json:"right"`
	Want  json.RawMessage `json:"want"`
	Error string          `json:"error"`
}

type chunkCase struct {
	Name   string            `json:"name"`
	Chunks []json.RawMessage `json:"chunks"`
	Want   json.RawMessage   `json:"want"`
}

func readGolden[C any](t *testing.T, name string) []C {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	var f goldenFile[C]
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(f.Cases) == 0 {
		t.Fatalf("%s has no cases", name)
	}
	return f.Cases
}

func TestGoldenAddMessages(t *testing.T) {
	t.Parallel()
	for _, c := range readGolden[addCase](t, "add_messages.json") {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			left, right := mustAny(t, c.Left), mustAny(t, c.Right)
			got, err := AddMessages(left, right)
			if c.Error != "" {
				if err == nil {
					t.Fatalf("want error %q, got %v", c.Error, got)
				}
				// Upstream's text, with the id quoted Go's way.
				if want := regexp.MustCompile(`\('([^']*)'\)`).FindStringSubmatch(c.Error); want == nil || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprintf("%q", want[1]))) {
					t.Fatalf("error %q does not name the id of %q", err, c.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			compareShapes(t, shapeAll(t, got.([]Message)), c.Want, givenIDs(c.Left, c.Right))
		})
	}
}

func TestGoldenChunks(t *testing.T) {
	t.Parallel()
	for _, c := range readGolden[chunkCase](t, "chunks.json") {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			var acc Message
			for i, raw := range c.Chunks {
				var m Message
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
				if i == 0 {
					acc = m
					continue
				}
				var err error
				if acc, err = MergeChunks(acc, m); err != nil {
					t.Fatalf("merge chunk %d: %v", i, err)
				}
			}
			got := shape(t, acc)
			compareShapes(t, got, c.Want, givenIDs(c.Chunks))
		})
	}
}

func mustAny(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	v, err := decodeAny(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shape keeps the fields record.mjs keeps, from the message's own JSON.
func shape(t *testing.T, m Message) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	full, err := decodeObject(b)
	if err != nil {
		t.Fatal(err)
	}
	keep := []string{"type", "content", "id", "name"}
	switch m.Type {
	case TypeAI, TypeAIChunk:
		keep = append(keep, "tool_calls", "invalid_tool_calls", "usage_metadata")
		for _, k := range []string{"additional_kwargs", "response_metadata"} {
			if len(full[k].(map[string]any)) > 0 {
				keep = append(keep, k)
			}
		}
		if m.Type == TypeAIChunk {
			keep = append(keep, "tool_call_chunks")
		}
	case TypeTool:
		keep = append(keep, "tool_call_id", "status")
	}
	out := map[string]any{}
	for _, k := range keep {
		out[k] = full[k]
	}
	for _, k := range []string{"tool_calls", "invalid_tool_calls", "tool_call_chunks"} {
		items, _ := out[k].([]any)
		for _, it := range items {
			obj := it.(map[string]any)
			delete(obj, "type")
			delete(obj, "error")
		}
	}
	return out
}

func shapeAll(t *testing.T, ms []Message) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = shape(t, m)
	}
	return out
}

var uuidShape = regexp.MustCompile(`^[0-9a-f-]{36}$`)

// compareShapes compares got with want after replacing generated ids
// (uuids the case did not give) with <id:N> in order of appearance.
func compareShapes(t *testing.T, got any, want json.RawMessage, given map[string]bool) {
	t.Helper()
	n := 0
	seen := map[string]string{}
	var norm func(v any) any
	norm = func(v any) any {
		switch x := v.(type) {
		case []any:
			for i := range x {
				x[i] = norm(x[i])
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				if s, ok := x[k].(string); ok && k == "id" && !given[s] && uuidShape.MatchString(s) {
					if seen[s] == "" {
						n++
						seen[s] = fmt.Sprintf("<id:%d>", n)
					}
					x[k] = seen[s]
					continue
				}
				x[k] = norm(x[k])
			}
		}
		return v
	}
	// Ids are numbered in document order: messages in order, "id" first
	// within each (record.mjs's reviver visits the same way for our shapes).
	gotJSON, _ := json.Marshal(norm(got))
	var a, b any
	_ = json.Unmarshal(gotJSON, &a)
	_ = json.Unmarshal(want, &b)
	ca, _ := json.Marshal(a)
	cb, _ := json.Marshal(b)
	if !bytes.Equal(ca, cb) {
		t.Fatalf("got  %s\nwant %s", ca, cb)
	}
}

func givenIDs(raws ...any) map[string]bool {
	ids := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "id" {
					ids[s] = true
				}
				walk(e)
			}
		}
	}
	for _, r := range raws {
		b, _ := json.Marshal(r)
		var v any
		_ = json.Unmarshal(b, &v)
		walk(v)
	}
	return ids
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// "id" first, then the rest in any order: only ids are renumbered.
	for i, k := range keys {
		if k == "id" {
			keys[0], keys[i] = keys[i], keys[0]
		}
	}
	return keys
}

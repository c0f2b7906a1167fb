package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Content is a message's content: a string, or a list of content blocks
// (LangChain's `str | list[str | dict]`). Blocks non-nil means the list
// form, even when it is empty (an AI message that only calls tools has
// `"content": []`).
type Content struct {
	// Text is the content in string form. Ignored when Blocks is non-nil.
	Text string
	// Blocks is the content in list form.
	Blocks []Block
}

// Text returns string content.
func Text(s string) Content { return Content{Text: s} }

// Blocks returns list content; with no blocks it is the empty list.
func Blocks(b ...Block) Content {
	if b == nil {
		b = []Block{}
	}
	return Content{Blocks: b}
}

// IsList reports whether the content is in list form.
func (c Content) IsList() bool { return c.Blocks != nil }

// String returns the text of the content: the string, or the text of
// its "text" blocks joined, as LangChain's `message.text`.
func (c Content) String() string {
	if c.Blocks == nil {
		return c.Text
	}
	var sb strings.Builder
	for _, b := range c.Blocks {
		if b.Type() == "text" {
			if s, ok := b["text"].(string); ok {
				sb.WriteString(s)
			}
		}
	}
	return sb.String()
}

// MarshalJSON writes a string or an array of blocks.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Blocks == nil {
		return json.Marshal(c.Text)
	}
	return json.Marshal(c.Blocks)
}

// UnmarshalJSON reads a string, null (the empty string) or an array whose
// items are blocks (objects) or strings; a string item becomes a text
// block, which is what LangChain makes of it when it reads content.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		*c = Content{}
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*c = Content{Text: s}
		return nil
	case len(data) > 0 && data[0] == '[':
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return err
		}
		blocks := make([]Block, 0, len(items))
		for i, raw := range items {
			raw = bytes.TrimSpace(raw)
			if len(raw) > 0 && raw[0] == '"' {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return err
				}
				blocks = append(blocks, Block{"type": "text", "text": s})
				continue
			}
			var b Block
			if err := b.UnmarshalJSON(raw); err != nil {
				return fmt.Errorf("content block %d: %w", i, err)
			}
			blocks = append(blocks, b)
		}
		*c = Content{Blocks: blocks}
		return nil
	}
	return fmt.Errorf("content must be a string or a list of blocks, got %s", abbreviate(data))
}

// Block is one content block, kept as the JSON object it was — every
// field, known or not, so a provider's blocks (Anthropic's
// `{"type":"tool_use","id","name","input","index","partial_json"}`,
// `cache_control`, citations...) survive a round trip. Numbers read from
// JSON are json.Number, so none loses precision.
type Block map[string]any

// TextBlock returns `{"type":"text","text":s}`.
func TextBlock(s string) Block { return Block{"type": "text", "text": s} }

// Type returns the block's "type", or "".
func (b Block) Type() string {
	s, _ := b["type"].(string)
	return s
}

// UnmarshalJSON reads a JSON object, keeping numbers as json.Number.
func (b *Block) UnmarshalJSON(data []byte) error {
	m, err := decodeObject(data)
	if err != nil {
		return fmt.Errorf("a content block must be a JSON object: %w", err)
	}
	if m == nil {
		return fmt.Errorf("a content block must be a JSON object, got null")
	}
	*b = m
	return nil
}

// decodeObject decodes a JSON object with json.Number numbers; null gives
// a nil map.
func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeAny decodes any JSON value with json.Number numbers.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func abbreviate(data []byte) string {
	const max = 60
	if len(data) > max {
		return string(data[:max]) + "…"
	}
	return string(data)
}

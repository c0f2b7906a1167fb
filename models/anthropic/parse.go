package anthropic

import (
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// Parse is the one function that turns a reply (whole, or accumulated
// from a stream) into an "ai" message, as langchain-anthropic does:
//
//   - the content is a string when the reply is a single text block
//     (without citations), else the list of its blocks in the API's
//     order: text, thinking (with its signature), tool_use (with its
//     input), server tools... Empty text blocks are left out (a request
//     may not hold them), and a reply with no blocks is "";
//   - tool_use blocks are also tool_calls, or invalid_tool_calls when
//     their input is not a JSON object (in a stream, the input_json_delta
//     fragments as sent; in a whole reply, the string the API put there);
//   - usage is usage_metadata: input_tokens is the whole prompt (input +
//     cache reads + cache writes), with cache_read and cache_creation,
//     and the writes split by TTL when the API split them (cache_creation
//     then 0, as LangChain does, so they are not counted twice);
//   - response_metadata has id, model, model_name, stop_reason,
//     stop_sequence, model_provider and request_id.
//
// The message's id is the API's (msg_…).
func Parse(msg *anthropic.Message, requestID string) models.Message {
	out := models.Message{Type: models.TypeAI, ID: msg.ID}
	var blocks []models.Block
	for _, b := range msg.Content {
		input := ""
		if b.Type == "tool_use" {
			input = toolInput(b.Input)
			call, invalid := models.ParseToolCall(b.ID, b.Name, input)
			if call != nil {
				out.ToolCalls = append(out.ToolCalls, *call)
			} else {
				out.InvalidToolCalls = append(out.InvalidToolCalls, *invalid)
			}
		}
		if cb := contentBlock(b, input); cb != nil {
			blocks = append(blocks, cb)
		}
	}
	switch {
	case len(blocks) == 0:
		out.Content = models.Text("")
	case len(blocks) == 1 && blocks[0].Type() == "text" && blocks[0]["citations"] == nil:
		out.Content = models.Text(blocks[0]["text"].(string))
	default:
		out.Content = models.Blocks(blocks...)
	}
	if msg.JSON.Usage.Valid() {
		out.Usage = usage(msg.Usage)
	}
	md := map[string]any{
		"id": msg.ID, "model": string(msg.Model), "model_name": string(msg.Model),
		"stop_reason": string(msg.StopReason), "stop_sequence": nil, "model_provider": Provider,
	}
	if msg.StopSequence != "" {
		md["stop_sequence"] = msg.StopSequence
	}
	if requestID != "" {
		md["request_id"] = requestID
	}
	out.ResponseMetadata = md
	return out
}

// toolInput is a tool_use block's arguments as the model wrote them: a
// JSON string input (how a non-streamed body carries malformed
// arguments) is its text.
func toolInput(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// contentBlock is one block of a reply as the content list holds it: the
// same for a whole reply and for a block accumulated from a stream, whose
// raw JSON the SDK rebuilds. A tool_use block's input is the arguments as
// written (input), a JSON string when they are not JSON. nil for an empty
// text block.
func contentBlock(b anthropic.ContentBlockUnion, input string) models.Block {
	switch b.Type {
	case "text":
		if b.Text == "" {
			return nil
		}
		out := models.TextBlock(b.Text)
		if len(b.Citations) > 0 {
			if c := rawBlock(b.RawJSON(), nil); c != nil && c["citations"] != nil {
				out["citations"] = c["citations"]
			}
		}
		return out
	case "thinking":
		return models.Block{"type": "thinking", "thinking": b.Thinking, "signature": b.Signature}
	case "redacted_thinking":
		return models.Block{"type": "redacted_thinking", "data": b.Data}
	case "tool_use":
		in := json.RawMessage(input)
		if !json.Valid(in) {
			in, _ = json.Marshal(input)
		}
		raw, _ := json.Marshal(map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": in})
		return rawBlock(string(raw), models.Block{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input})
	}
	return rawBlock(b.RawJSON(), models.Block{"type": b.Type})
}

func rawBlock(raw string, fallback models.Block) models.Block {
	var b models.Block
	if raw == "" || json.Unmarshal([]byte(raw), &b) != nil {
		return fallback
	}
	return b
}

// usage is LangChain's usage_metadata for Anthropic's usage.
func usage(u anthropic.Usage) *models.UsageMetadata {
	in := int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
	out := int(u.OutputTokens)
	d := &models.InputTokenDetails{
		CacheRead:     models.Int(int(u.CacheReadInputTokens)),
		CacheCreation: models.Int(int(u.CacheCreationInputTokens)),
	}
	if w5, w1 := u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens; w5 != 0 || w1 != 0 {
		d.Ephemeral5m, d.Ephemeral1h = models.Int(int(w5)), models.Int(int(w1))
		d.CacheCreation = models.Int(0)
	}
	return &models.UsageMetadata{InputTokens: in, OutputTokens: out, TotalTokens: in + out, InputTokenDetails: d}
}

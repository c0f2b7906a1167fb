package anthropic

import (
	"encoding/json"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// Parse is the one function that turns a reply (whole, or accumulated
// from a stream) into an "ai" message:
//
//   - text blocks are the content, a string when the reply holds nothing
//     but text and tool calls, else the list of its blocks (thinking,
//     server tools...) as the API wrote them;
//   - tool_use blocks are tool_calls, or invalid_tool_calls when their
//     input is not a JSON object (in a stream, the input_json_delta
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
	var text strings.Builder
	var blocks []models.Block
	onlyText := true
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			blocks = append(blocks, rawBlock(b.RawJSON(), models.TextBlock(b.Text)))
		case "tool_use":
			call, invalid := models.ParseToolCall(b.ID, b.Name, toolInput(b.Input))
			if call != nil {
				out.ToolCalls = append(out.ToolCalls, *call)
			} else {
				out.InvalidToolCalls = append(out.InvalidToolCalls, *invalid)
			}
		default:
			onlyText = false
			blocks = append(blocks, rawBlock(b.RawJSON(), models.Block{"type": b.Type}))
		}
	}
	if onlyText {
		out.Content = models.Text(text.String())
	} else {
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

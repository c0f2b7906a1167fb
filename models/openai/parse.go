package openai

import (
	"github.com/openai/openai-go/v3"

	"github.com/superstep-dev/superstep/models"
)

// Parse is the one function that turns a completion (whole, or
// accumulated from a stream) into an "ai" message: the first choice's
// text as content, its function calls as tool_calls (invalid_tool_calls
// when the arguments are not a JSON object), usage as usage_metadata
// (input_tokens is prompt_tokens, cached_tokens is cache_read,
// cache_write_tokens cache_creation, reasoning_tokens reasoning; counts
// the server did not send stay unset), and response_metadata with id,
// model_name, finish_reason (upstream's key), stop_reason (the same, so
// readers need one key across providers), model_provider and request_id. The message's id is the completion's.
func Parse(c *openai.ChatCompletion, provider, requestID string) models.Message {
	out := models.Message{Type: models.TypeAI, ID: c.ID, Content: models.Text("")}
	md := map[string]any{"id": c.ID, "model_name": c.Model, "model_provider": provider}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		out.Content = models.Text(ch.Message.Content)
		for _, tc := range ch.Message.ToolCalls {
			call, invalid := models.ParseToolCall(tc.ID, tc.Function.Name, tc.Function.Arguments)
			if call != nil {
				out.ToolCalls = append(out.ToolCalls, *call)
			} else {
				out.InvalidToolCalls = append(out.InvalidToolCalls, *invalid)
			}
		}
		md["finish_reason"], md["stop_reason"] = ch.FinishReason, ch.FinishReason
	}
	if requestID != "" {
		md["request_id"] = requestID
	}
	out.ResponseMetadata = md
	if c.Usage.JSON.PromptTokens.Valid() || c.Usage.TotalTokens > 0 {
		out.Usage = usage(c.Usage)
	}
	return out
}

func usage(u openai.CompletionUsage) *models.UsageMetadata {
	um := &models.UsageMetadata{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
	if um.TotalTokens == 0 {
		um.TotalTokens = um.InputTokens + um.OutputTokens
	}
	if d := u.PromptTokensDetails; u.JSON.PromptTokensDetails.Valid() {
		um.InputTokenDetails = &models.InputTokenDetails{}
		if d.JSON.CachedTokens.Valid() {
			um.InputTokenDetails.CacheRead = models.Int(int(d.CachedTokens))
		}
		if d.JSON.CacheWriteTokens.Valid() {
			um.InputTokenDetails.CacheCreation = models.Int(int(d.CacheWriteTokens))
		}
	}
	if d := u.CompletionTokensDetails; u.JSON.CompletionTokensDetails.Valid() && d.JSON.ReasoningTokens.Valid() {
		um.OutputTokenDetails = &models.OutputTokenDetails{Reasoning: models.Int(int(d.ReasoningTokens))}
	}
	return um
}

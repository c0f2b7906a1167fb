// Package openai is a models.ChatModel on OpenAI's Chat Completions API,
// through the official SDK (github.com/openai/openai-go/v3). Anything
// speaking that API works through the base URL: Ollama
// (http://localhost:11434/v1/), vLLM, DeepSeek.
//
//	m, err := openai.New(openai.Config{Model: "gpt-5-mini"}) // key from OPENAI_API_KEY, base URL from OPENAI_BASE_URL
//	reply, err := models.Call(ctx, m, state.Messages, nil)
//
// # Configuration
//
// Config takes the API key (else OPENAI_API_KEY), the base URL (else
// OPENAI_BASE_URL, else https://api.openai.com/v1/), the model, the
// ls_provider name (default "openai"), a default reply cap (sent as
// max_completion_tokens, or max_tokens with LegacyMaxTokens), an
// *http.Client and Hooks. SDK retries are off: a failed call is a
// *models.ProviderError that the node's RetryPolicy retries (408, 409,
// 429 and 5xx, waiting the provider's retry-after), each retry a TaskRetried
// event.
//
// # Requests and replies
//
// Render builds the request (system, user, assistant with function tool
// calls, tool messages; function tools; ToolChoiceAny is "required"; a
// ResponseSchema is response_format json_schema, strict false unless the
// schema has a top-level "strict": true, as langchain-openai does; Extra as extra body
// fields); Parse reads a completion, whole or accumulated from a stream
// (content; tool_calls, or invalid_tool_calls for arguments that are not
// a JSON object; usage with cached_tokens as cache_read; finish_reason,
// model, request id). Hooks see the rendered
// *openai.ChatCompletionNewParams before the call and the outcome after.
//
// # Environment and secrets
//
// New reads OPENAI_API_KEY and OPENAI_BASE_URL, and OPENAI_ORG_ID and
// OPENAI_PROJECT_ID only when the base URL is api.openai.com (or unset):
// the headers openai.NewClient would add from the environment
// (OpenAI-Organization, OpenAI-Project, OPENAI_CUSTOM_HEADERS) are
// deleted, so an Ollama or vLLM base URL gets the organization and project
// only from Config. A Model prints (%v, %+v, %#v) and logs (slog) as its
// provider and model, never its key.
//
// A 429 insufficient_quota (the account is out of credit) is not retried,
// and x-should-retry: true|false overrides a status's retry class, as in
// the SDK's own policy (models.ProviderError.Retryable).
//
// # Streaming
//
// Stream asks for stream_options.include_usage and uses the SDK's
// ChatCompletionAccumulator. Content deltas are AIMessageChunks with
// string content, tool call deltas chunks with tool_call_chunks by
// index, and a last chunk (chunk_position "last") carries usage and the
// response metadata; all carry the completion's id, which the reply
// keeps. An {"error": …} event in the stream is a ProviderError with
// Midstream set (server_error: 500), retried by the node's policy under a
// new message id; a stream that ends without a finish reason is a
// connection_error.
//
// Servers differ in what they report: Ollama sends no token details, so
// cache_read stays unset (not 0); vLLM sends cached_tokens only with
// --enable-prompt-tokens-details.
package openai

// Package anthropic is a models.ChatModel on the Anthropic Messages API,
// through the official SDK (github.com/anthropics/anthropic-sdk-go/v2).
//
//	m, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5"}) // key from ANTHROPIC_API_KEY
//	reply, err := models.Call(ctx, m, state.Messages, &models.CallOptions{Tools: tools})
//
// # Configuration
//
// Config takes the API key (else ANTHROPIC_API_KEY), the base URL (else
// ANTHROPIC_BASE_URL, else the SDK's), the model, a default max_tokens
// (the API requires one; DefaultMaxTokens), an *http.Client and Hooks.
// The SDK reads no other environment variable. Its retries are off: a
// failed call is a *models.ProviderError that the node's RetryPolicy
// retries (429, 529 and 5xx, waiting the provider's retry-after), so each
// retry is the engine's TaskRetried event.
//
// # Requests and replies
//
// Render is the one function that builds a request from messages and
// options (system messages to system blocks, consecutive tool results to
// one user turn of tool_result blocks, tool calls to tool_use blocks,
// content blocks passed through); Parse is the one function that reads a
// reply, whole or accumulated from a stream (text, tool_use to tool_calls
// or invalid_tool_calls, usage with cache reads and writes, stop_reason,
// model, request id). Hooks.BeforeCall sees the rendered
// *anthropic.MessageNewParams and may change it; AfterCall sees the
// reply, usage, request id and timings. Prompt caching plugs in there.
//
// Temperature and CallOptions.Extra are sent as extra body fields (the v2
// SDK has no temperature field); a ResponseSchema is output_config.format.
//
// # Streaming
//
// Stream uses the SDK's event stream and Message.Accumulate. Each text
// delta is an AIMessageChunk with string content; a tool_use block start
// and each input_json_delta are chunks with tool_call_chunks indexed by
// the content block's index; a last chunk (chunk_position "last") carries
// usage and the response metadata. Every chunk has the message id from
// message_start, which the reply keeps. Tool arguments are read from the
// input_json_delta fragments as sent, because the SDK's accumulator
// replaces malformed input with {}: so a streamed reply equals the reply
// Generate returns for the same answer, malformed arguments included.
//
// An error event in the stream (overloaded_error after the 200) is a
// ProviderError with Midstream set and the status its type stands for
// (529); a stream that ends before message_delta is a connection_error.
// Either fails the attempt: what was streamed belongs to no reply, and
// the node's retry streams a new message under a new id.
//
// # Secrets
//
// The key is sent as x-api-key and kept nowhere else: errors carry the
// provider's words only (never the SDK's error, which holds the request),
// with the key redacted should a server echo it.
package anthropic

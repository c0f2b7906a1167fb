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
// retries (408, 409, 429, 529 and 5xx, waiting the provider's
// retry-after; an x-should-retry header overrides the status, as in the
// SDK's policy), so each retry is the engine's TaskRetried event.
//
// # Requests and replies
//
// Render is the one function that builds a request from messages and
// options (system messages to system blocks, consecutive tool results to
// one user turn of tool_result blocks, tool calls to tool_use blocks,
// content blocks passed through, tool results first in their user turn);
// Parse is the one function that reads a reply, whole or accumulated from
// a stream (text, tool_use to tool_calls or invalid_tool_calls, usage
// with cache reads and writes, stop_reason, model, request id).
//
// As in langchain-anthropic, a reply's content is a string only when it
// is a single text block; otherwise it is the list of the reply's blocks
// in the API's order (thinking with its signature, text, tool_use with
// its input, ...), and the tool_use blocks are also tool_calls. Sent
// back, the list keeps its order (thinking blocks where they stood), and
// each tool_use is sent once with its tool call's arguments: tool_calls
// are authoritative, so an edit of them is what the model sees. Hooks.BeforeCall sees the rendered
// *anthropic.MessageNewParams and may change it; AfterCall sees the
// reply, usage, request id and timings. Prompt caching plugs in there.
//
// Temperature and CallOptions.Extra are sent as extra body fields (the v2
// SDK has no temperature field); a ResponseSchema is output_config.format
// (json_schema), with additionalProperties: false added to every object
// schema that does not set it, since the API refuses object schemas
// without it (the caller's schema is copied, not changed).
//
// # Streaming
//
// Stream uses the SDK's event stream and Message.Accumulate (which
// gathers thinking_delta and signature_delta too). Each text delta of a
// leading text block is an AIMessageChunk with string content; a tool_use
// block start and each input_json_delta are chunks with tool_call_chunks
// indexed by the content block's index; every other block (thinking,
// tool_use, text after them) is a chunk holding that one block whole,
// sent at its content_block_stop; a last chunk (chunk_position "last")
// carries usage and the response metadata. Merging the chunks
// (models.MergeChunks) gives the reply Stream returns, which is the reply
// Generate returns for the same answer. Upstream instead streams every
// block's deltas with an "index" key when tools or thinking are on, which
// leaves index and partial_json keys in the merged content; the price of
// our equality is that text after a thinking or tool_use block, and
// thinking itself, arrive whole rather than delta by delta. Every chunk has the message id from
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
// with the key redacted should a server echo it, and a Model prints (%v,
// %+v, %#v) and logs (slog) as its provider and model name.
package anthropic

// Package models holds LangGraph's message model in Go: LangChain's
// messages with their exact JSON, the add_messages reducer, and the
// merging of streamed AI message chunks. Chat model providers live in
// sub-packages.
//
// # The message model
//
// Message is one struct for every LangChain message type (human, ai,
// AIMessageChunk, system, tool, remove), told apart by Type, with the
// constructors Human, System, AI, AIChunk, AIWithToolCalls, ToolResult,
// Remove and RemoveAll. It marshals as the dict Python's LangChain
// writes — the form the Agent Server sends and LangGraph clients read —
// with every base field (content, additional_kwargs, response_metadata,
// type, name, id) and the type's own (tool_calls, invalid_tool_calls and
// usage_metadata for ai; tool_call_chunks and chunk_position for chunks;
// tool_call_id, artifact and status for tool) in Python's order.
//
// Content is a string or a list of blocks. A Block is the JSON object it
// was read from, every field kept and numbers kept as json.Number, so a
// provider's blocks round-trip unchanged; top-level fields a type does
// not know are kept in Message.Extra. Token counts a provider did not
// report are nil, not 0.
//
// Unmarshal (and ToMessages, for Go values) accepts what upstream's
// convert_to_messages accepts: LangChain dicts, OpenAI-style role dicts
// ("user", "assistant" with OpenAI tool calls, "system", "developer",
// "tool"), strings as human messages, and [2]string role pairs. Anything
// else is an ErrInvalidMessage that says which field was wrong.
//
// # AddMessages
//
// AddMessages is upstream's add_messages, step for step: both sides
// converted, chunks turned into messages, a uuid v4 for every message
// without an id, the last RemoveAll marker of the right side keeping only
// what follows it, then replace in place by id, delete by RemoveMessage
// (an unknown id is ErrUnknownMessageID), append the rest. It is
// registered as the "add_messages" reducer, so a state field can name it
// in a tag; MessagesState is upstream's MessagesState.
//
// # Chunks
//
// MergeChunks adds two AIMessageChunks as upstream's `chunk + chunk`
// does: content strings concatenated and block lists merged by their
// "index"; metadata dicts merged recursively; tool call chunks merged by
// index and tool calls derived from them again with ParsePartialJSON, a
// tolerant parser for the JSON a model has streamed so far; usage summed.
// ToMessage turns the finished chunk into an "ai" message.
//
// # Chat models
//
// ChatModel is the small interface every provider implements: Info,
// Generate and Stream, with per-call CallOptions (tools, tool choice, max
// tokens, temperature, stop sequences, structured output, provider
// extras); WithTools binds tools to a model. Node code calls a model
// through Call, which streams the reply to the run's "messages" stream
// (engine.EmitMessageChunk, with upstream's ls_* metadata) under one id
// that the returned reply keeps, so the reply is not streamed again when
// the node returns it. Each provider renders its request with one
// function and runs Hooks before and after each call, with the rendered
// SDK request in hand: prompt caching and per-call records plug in there.
//
// # Providers, errors and hooks
//
// The providers live in sub-packages on the official SDKs:
// models/anthropic (Messages) and models/openai (Chat Completions, and
// the servers compatible with it). Each renders its request with one
// exported function (Render) and reads replies with one (Parse), for
// whole and streamed replies alike, so Stream returns what Generate
// would.
//
// Hooks (on each provider's Config) run around every call through
// Hooks.Around: BeforeCall gets the Request with the rendered SDK params
// (a pointer it may change, or an error to refuse the call), AfterCall
// the Response with the reply, usage, request id, time to first token and
// duration, or the error.
//
// A provider's failure is a *ProviderError: provider, HTTP status, error
// type, message, request id, the retry-after wait, and whether it ended
// a stream that had begun. Its HTTPStatus and RetryAfter methods are what
// engine.DefaultRetryOn reads, so a node's RetryPolicy retries what the
// SDKs' own policy would — a dropped connection, 408, 409, 429 and 5xx
// (529 included), unless the response said x-should-retry: false, and not
// OpenAI's 429 insufficient_quota — after the wait the provider asked for; the
// SDKs' own retries are off, so every retry is the engine's TaskRetried
// event. A cancelled context cancels the HTTP request and is returned as
// the context's error, which is not retried. A ProviderError holds only
// strings, never an SDK error (those hold the request and its key), and
// the key is redacted from the provider's words: API keys appear in no
// error, event or stream part. Tool call arguments are read by
// ParseToolCall: a JSON object makes a tool call, anything else an
// invalid tool call with the arguments as written.
//
// # Where we differ
//
//   - An empty Name, ID or tool call id is written as null: Go cannot
//     tell "" from absent here, and LangChain never sets them to "".
//   - A string item in a content list is read as a text block; Python
//     keeps it a bare string. Merging string content into block content
//     makes a text block too (as LangChain.js), where Python puts the bare
//     string in the list.
//   - The "example" field of older cores is not written, but is kept
//     when read.
//   - A chunk read from JSON with its own tool_calls keeps them; upstream
//     derives them again from tool_call_chunks when it builds one.
//   - We do not implement add_messages' format="langchain-openai".
//   - A RemoveMessage may be read without "content".
//
// The golden files under testdata/golden were recorded from LangGraph.js
// 1.7.3 (make golden/record); message JSON is checked against Python's
// form by hand, as LangChain.js serialises differently.
package models

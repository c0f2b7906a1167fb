package localprovider

import "time"

// Turn is the double's answer to one request: a reply (text, tool calls,
// stop reason, usage) and, optionally, a fault injected into it.
type Turn struct {
	// Text is the reply's text. When streamed it is sent in one delta
	// unless Chunks is set.
	Text string
	// Chunks, when set, is the reply's text split into stream deltas
	// (their concatenation replaces Text).
	Chunks []string
	// Thinking, when set, is an Anthropic reply's thinking block, before
	// the text, signed with ThinkingSignature. Streamed, it is sent as two
	// thinking_delta halves and a signature_delta. OpenAI replies leave it
	// out.
	Thinking string
	// TextAfterTools, when set, is a second text block after the tool
	// calls (Anthropic only): the content list is then text, tool_use…,
	// text.
	TextAfterTools string
	// ToolCalls are the tool calls of the reply, in order, after the text.
	ToolCalls []ToolCall
	// StopReason is the provider's own word ("end_turn", "max_tokens",
	// "tool_use" for Anthropic; "stop", "length", "tool_calls" for OpenAI).
	// Empty: the tool-call reason when there are tool calls, else the
	// end-of-turn reason.
	StopReason string
	// Usage, when set, is reported as it is instead of the computed usage.
	Usage *Usage
	// Fault, when set, is injected into this request.
	Fault *Fault
}

// ToolCall is one scripted tool call.
type ToolCall struct {
	// ID is the call's id; empty gives a deterministic one
	// (toolu_local_…, call_local_…).
	ID   string
	Name string
	// Args is the raw argument JSON as the model "wrote" it. It is sent as
	// it is, so malformed JSON reaches the client malformed. Empty is "{}".
	// In an Anthropic JSON (non-streamed) body, where input must be JSON,
	// malformed Args are sent as a JSON string instead.
	Args string
	// ArgChunks, when set, are the stream fragments of Args (Anthropic
	// partial_json, OpenAI arguments deltas); their concatenation replaces
	// Args. Unset: Args is split in two.
	ArgChunks []string
}

// Usage is the token usage a reply reports, in Anthropic's terms. OpenAI
// replies report prompt_tokens = InputTokens + CacheCreationInputTokens +
// CacheReadInputTokens, with cached_tokens = CacheReadInputTokens and
// cache_write_tokens = CacheCreationInputTokens.
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
	// Ephemeral5mInputTokens and Ephemeral1hInputTokens split
	// CacheCreationInputTokens by the TTL of the entries written
	// (Anthropic's cache_creation object). A scripted Usage may leave
	// them 0.
	Ephemeral5mInputTokens int
	Ephemeral1hInputTokens int
}

// Midstream is a fault that happens after a streamed reply has begun.
type Midstream int

// The mid-stream faults.
const (
	// NoMidstream: the stream completes.
	NoMidstream Midstream = iota
	// ErrorEvent ends the stream with the provider's error event after
	// AfterDeltas deltas (Anthropic `event: error`, OpenAI `data: {"error":…}`),
	// after an HTTP 200. In a JSON (non-streamed) request the error is
	// answered as an HTTP error instead.
	ErrorEvent
	// DropConnection closes the connection abruptly after AfterDeltas
	// deltas, with no final event (and, for JSON requests, no response).
	DropConnection
)

// Fault is a failure injected into one request.
type Fault struct {
	// Status, when non-zero, answers the request with this HTTP error
	// status and the provider's error body; the reply is not sent.
	Status int
	// ErrorType is the provider's error type; empty derives it from the
	// status (429 rate_limit_error, 529 overloaded_error, 500 api_error, …).
	ErrorType string
	// Message is the error's message; empty gives a default one.
	Message string
	// Code is OpenAI's error code (insufficient_quota, …); empty derives
	// it from the status (429 rate_limit_exceeded). Anthropic has none.
	Code string
	// RetryAfter and RetryAfterMs are sent as the retry-after and
	// retry-after-ms headers of an error answer when set.
	RetryAfter   string
	RetryAfterMs string
	// ShouldRetry, when set ("true" or "false"), is sent as the
	// x-should-retry header of an error answer: the providers' override
	// of the status's retry class, which both SDKs honour.
	ShouldRetry string
	// FirstByteDelay holds the answer (error or reply) this long on the
	// double's clock before the first byte. It ends early when the client
	// goes away (its context is cancelled), and nothing is then sent.
	FirstByteDelay time.Duration
	// Midstream and AfterDeltas inject a failure into the reply after
	// that many content deltas (text or tool-argument fragments). For
	// ErrorEvent, ErrorType defaults to overloaded_error (OpenAI: server_error).
	Midstream   Midstream
	AfterDeltas int
}

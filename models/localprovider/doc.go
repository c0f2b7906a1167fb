// Package localprovider is a local double of the model providers' HTTP APIs:
// Anthropic Messages and OpenAI Chat Completions, spoken byte for byte as
// the official Go SDKs expect, so model code is tested through the real
// clients with no network. With no script it is also an "offline model":
// deterministic, labelled replies for running graphs when no API key is
// configured.
//
// # What it emulates
//
// Anthropic Messages (point the SDK's base URL at the server):
//
//   - POST /v1/messages as JSON, and as SSE when "stream": true, with the
//     API's event sequence: message_start (usage with final input and cache
//     counts), ping, content_block_start / content_block_delta /
//     content_block_stop for text (text_delta) and tool_use
//     (input_json_delta fragments, input starting as {}), message_delta
//     (stop_reason, cumulative usage) and message_stop.
//   - POST /v1/messages/count_tokens.
//   - Errors as {"type":"error","error":{"type","message"},"request_id"},
//     a request-id header on every answer, and the anthropic-version header
//     checked (AnthropicVersions: anthropic-sdk-go/v2 sends 2026-10-21).
//
// OpenAI Chat Completions (base URL: the server's URL + "/v1/"):
//
//   - POST /v1/chat/completions as JSON, and as SSE (data: {chunk} lines,
//     data: [DONE]) with tool_calls deltas by index, id, type and name on
//     the first fragment of each call, and, with
//     stream_options.include_usage, the usage chunk with "choices": [] just
//     before [DONE] (every other chunk then has "usage": null).
//   - Errors as {"error":{"message","type","param","code"}}, an
//     x-request-id header, usage with prompt_tokens_details.cached_tokens
//     (left out with Config.OmitCachedTokens, as vLLM and Ollama do).
//
// Both caches prompts as the providers do; see Prompt caching below.
//
// API keys are never logged, stored or echoed: a Request keeps a
// Fingerprint of the key and its credentials headers read "[redacted]".
//
// # What it checks
//
// Requests are validated as the real APIs do for what our providers send,
// and a bad one is answered 400 invalid_request_error with the API's
// message (so the SDK returns an error with the status):
//
//   - Anthropic: model, max_tokens (required; ≥ 0; 0 not with stream), a
//     non-empty messages list, roles user/assistant, non-empty content,
//     unique tool names with an input_schema; every tool_result answering a
//     tool_use of the turn just before it, the tool_result blocks first in
//     their turn (before any text), and every tool_use answered in the
//     next turn (consecutive same-role messages are one turn, as the API
//     merges them); at most 4 cache_control markers counting the top-level
//     automatic one, no 1h marker after a 5m one, none on thinking blocks;
//     output_config.format a json_schema whose object schemas all set
//     additionalProperties: false. No key is 401 authentication_error.
//   - OpenAI: model, non-empty messages, known roles, stream_options only
//     with stream, named functions, every tool message answering a pending
//     tool_call_id of the assistant message before it and every tool call
//     answered; response_format text, json_object or json_schema with a
//     valid name, and with strict: true every object closed
//     (additionalProperties: false) and every property required. No key
//     is 401.
//
// # Prompt caching
//
// The double caches prompts honestly (reference §6.4), so cache hits,
// writes and breaks can be tested through the real SDKs. It is on by
// default; Config.DisablePromptCache turns it off (every prompt token is
// then uncached input). A Turn's scripted Usage is still reported as it
// is, but the request reads and writes the cache all the same.
//
// Anthropic: a request is canonicalised into blocks in the order the
// API's invalidation tiers fall (reference §1.3):
//
//	tools… ⟨speed, web search, citations⟩ system… ⟨tool_choice, thinking, effort, images⟩ message blocks…
//
// A block's bytes are its JSON as sent, compacted, keys in the order sent,
// without its cache_control (a string system or content is the text block
// it stands for); message blocks fold in their role. The two
// ⟨pseudo-blocks⟩ stand for request parameters and count no tokens: a
// change of speed, of the web-search server tools or of citations keeps
// the tools tier; a change of tool_choice, thinking, effort or of whether
// images are present keeps tools and system; a reordered tool or another
// model keeps nothing. The key k(i) of the prefix blocks[0..i] is a
// SHA-256 over the API, the model and the blocks' bytes, chained block by
// block. Tokens are Config.Tokens of the bytes (count_tokens answers their
// sum, cache or not).
//
//   - Markers: each cache_control, and the top-level (automatic) one on
//     the last block that may carry a marker (walking back past thinking
//     blocks). More than 4 in all, a 1h marker after a 5m one (the
//     automatic one counts as last), a marker on a thinking block, or an
//     automatic marker landing on a block marked with another TTL is a
//     400 invalid_request_error.
//   - Lookup, at the request's arrival on the Clock: for each marker b,
//     k(b), k(b−1) … k(b−20) are tried, counting content blocks only as
//     the API does (a tier pseudo-block in between is tried but not
//     counted); the hit is the largest index
//     found live over all markers. So reads land only where an earlier
//     request wrote, and more than 20 new blocks before a marker miss
//     silently.
//   - Writes: each marker whose prefix reaches the model's minimum
//     (DefaultCacheMinTokens by model id prefix, overridden by
//     Config.CacheMinTokens) writes or refreshes its entry to expire its
//     TTL (5m, or 1h) after the request's arrival; the hit's entry is
//     refreshed too. Below the minimum nothing is written, with no error.
//   - Visibility: writes take effect when the response starts (just
//     before message_start, or the JSON body). Identical requests in
//     flight together all miss and all pay for the write; a request sent
//     once the first has streamed message_start reads ("lead then fan").
//     A request answered with an error writes nothing.
//   - Usage: cache_read_input_tokens = tokens(0..hit);
//     cache_creation_input_tokens = tokens(hit..last written marker),
//     split into cache_creation.ephemeral_5m_input_tokens and
//     ephemeral_1h_input_tokens by the TTL of the marker that ends each
//     stretch; input_tokens = the rest (after the last written marker).
//   - Isolation: entries belong to one API key (its Fingerprint) and one
//     model.
//
// OpenAI (implicit mode): the prefix is the tools, then one block per
// message, keyed as above. A request reads the longest cached prefix of at
// least 1024 tokens (the same minimum table; every non-Claude model gets
// the "" entry, 1024) among the entries of its API key and its
// prompt_cache_key (no key is a route of its own), floored to a multiple
// of 128 tokens, and reports it as cached_tokens; every prefix of at least
// the minimum is written, for free (cache_write_tokens stays 0), visible
// once the response starts. The first ~256 tokens that OpenAI also routes
// by are part of every key already. prompt_cache_retention "24h" keeps an
// entry 24 hours after its last use; "in_memory" (and the default) 5
// minutes after its last use, and at most an hour after it was written.
//
// # Scripting
//
// A test queues Turns, either for the whole server (Script) or for one API
// key (ScriptKey, so parallel callers get their own answers); each request
// takes the next turn of its key, else of the server:
//
//	s, ts := localprovider.NewTestServer(localprovider.Config{})
//	defer ts.Close()
//	s.Script(
//		localprovider.Turn{Fault: &localprovider.Fault{Status: 429, RetryAfterMs: "1"}},
//		localprovider.Turn{Chunks: []string{"Let me ", "check."}, ToolCalls: []localprovider.ToolCall{
//			{Name: "get_weather", Args: `{"city":"Paris"}`},
//			{Name: "get_weather", Args: `{"city": "Ro`}, // malformed, sent as it is
//		}},
//	)
//
// A Turn gives the text (whole, or Chunks for the stream deltas), for
// Anthropic a thinking block before it and a text block after the tool
// calls (Thinking, TextAfterTools), tool calls (raw argument JSON, optionally ArgChunks for the fragments), the
// stop reason, and usage numbers; unset, usage is computed from the request
// with the Config's deterministic token estimate (EstimateTokens:
// ⌈bytes/4⌉). Requests returns every request received, decoded
// (AnthropicRequest or OpenAIRequest) beside its raw body and headers, so a
// test asserts what the client sent, including X-Stainless-Retry-Count
// (Request.RetryCount) after a retry.
//
// A graph whose tool loop takes more than the offline model's one call
// and one report (see below) needs answers for as many runs as people
// start, which a script cannot queue in advance. Config.Respond answers
// those: it sees each decoded request that nothing scripted answers and
// returns a Turn, or declines (false) and leaves the request to the
// offline model:
//
//	localprovider.New(localprovider.Config{Respond: func(r localprovider.Request) (localprovider.Turn, bool) {
//		if r.Anthropic == nil || !offersMyTools(r.Anthropic) {
//			return localprovider.Turn{}, false
//		}
//		return nextStep(r.Anthropic), true // from the conversation so far
//	}})
//
// examples/cveagent drives its ReAct loop offline this way.
//
// # Faults
//
// Turn.Fault injects, per request: an HTTP error status with the provider's
// body (429 rate_limit_error, 529 overloaded_error, 500 api_error, …) and
// retry-after / retry-after-ms and x-should-retry headers (and an OpenAI
// error code, such as insufficient_quota); a slow first byte (FirstByteDelay,
// waited on the injected Clock and abandoned when the client's context is
// cancelled); a mid-stream error event after some deltas (ErrorEvent, which
// the SDKs surface as the stream's Err()); or a connection dropped
// mid-stream (DropConnection). Config.OnRequest lets a test act at the
// moment a request arrives (cancel its context, fire the clock) instead of
// sleeping.
//
// # The offline model
//
// With nothing scripted the double still answers, deterministically, every
// text starting with OfflineLabel: after tool results it reports what they
// returned; when the last user message names an offered tool it calls it
// with arguments derived from the message and the tool's schema (a quoted
// string, the first number, empty arrays and objects); otherwise it echoes
// the message. The Studio uses it when no API key is configured.
//
// # Not emulated yet
//
//   - Prompt caching beyond the rules above: models that render thinking
//     before the tools (thinking is always in the second tier here); the
//     thinking-block stripping of older models when a plain user message
//     follows; cache matches inside a block (OpenAI caches every 128
//     tokens of a prefix, the double only at block boundaries, so a
//     prompt that diverges mid-message reads up to the message before);
//     OpenAI's spill-over above ~15 requests a minute per prefix and key,
//     response_format in the prefix, prompt_cache_options and explicit
//     breakpoints (GPT-5.6+), cache_write_tokens billing; the
//     cache-diagnosis beta; workspaces (isolation is per API key); and
//     max_tokens: 0 pre-warming beyond what any request does (it is
//     answered as an ordinary request, which writes the markers).
//   - Thinking beyond a scripted block (Turn.Thinking: a thinking block
//     before the text, streamed as thinking_delta and signature_delta;
//     the thinking request parameter is not read), images, documents, server tools, citations, the
//     Batches, Models and Files APIs, OpenAI's Responses API, n > 1 choices,
//     logprobs, and rate-limit headers (anthropic-ratelimit-*, x-ratelimit-*).
//   - In an Anthropic JSON body, malformed tool arguments are sent as a
//     JSON string (a body must stay JSON); streams send them as given. Note
//     that anthropic-sdk-go's Message.Accumulate replaces tool input that is
//     not valid JSON with {} at content_block_stop: code that must see the
//     malformed arguments reads the input_json_delta fragments.
package localprovider

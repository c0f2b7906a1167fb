package localprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAIRequest is a decoded Chat Completions request (the fields the
// double reads; Request.Body holds every byte sent).
type OpenAIRequest struct {
	Model             string          `json:"model"`
	Messages          []OpenAIMessage `json:"messages"`
	Tools             []OpenAITool    `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Stream            bool            `json:"stream"`
	StreamOptions     *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           *int   `json:"max_tokens"`
	MaxCompletionTokens *int   `json:"max_completion_tokens"`
	PromptCacheKey      string `json:"prompt_cache_key"`
	// PromptCacheRetention is "in_memory" or "24h".
	PromptCacheRetention string `json:"prompt_cache_retention"`
	// ResponseFormat asks for structured output.
	ResponseFormat *OpenAIResponseFormat `json:"response_format"`
}

// OpenAIResponseFormat is a request's response_format.
type OpenAIResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Schema      map[string]any `json:"schema"`
		Strict      *bool          `json:"strict"`
	} `json:"json_schema"`
}

// OpenAIMessage is one message of a Chat Completions request.
type OpenAIMessage struct {
	Role string `json:"role"`
	// Content is the content as sent: a string, an array of parts, or null.
	Content    json.RawMessage  `json:"content"`
	Name       string           `json:"name,omitempty"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	// Raw is the message's JSON as sent.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw bytes beside the decoded fields.
func (m *OpenAIMessage) UnmarshalJSON(data []byte) error {
	type plain OpenAIMessage
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*m = OpenAIMessage(p)
	m.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// Text is the message's content as text (text parts joined).
func (m OpenAIMessage) Text() string {
	s, _ := contentText(m.Content)
	return s
}

// OpenAIToolCall is one tool call of an assistant message.
type OpenAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// OpenAITool is one entry of tools.
type OpenAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"function"`
	// Raw is the tool's JSON as sent.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw bytes beside the decoded fields.
func (t *OpenAITool) UnmarshalJSON(data []byte) error {
	type plain OpenAITool
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*t = OpenAITool(p)
	t.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// serveOpenAI answers /v1/chat/completions.
func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	key := bearer(r)
	req, err := s.newRequest(r, OpenAI, key)
	var or OpenAIRequest
	if err == nil {
		if err = json.Unmarshal(req.Body, &or); err == nil {
			req.OpenAI = &or
		}
	}
	s.record(&req)
	id := s.requestID()
	switch {
	case key == "":
		writeOpenAIError(w, id, http.StatusUnauthorized, "invalid_request_error", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		return
	case err != nil:
		writeOpenAIError(w, id, http.StatusBadRequest, "invalid_request_error", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	if msg, param := validateOpenAI(&or); msg != "" {
		writeOpenAIErrorParam(w, id, http.StatusBadRequest, "invalid_request_error", msg, param, "")
		return
	}
	p := openAIPrompt(&or, req.Key, req.Time)
	rep := s.prepare(s.turnFor(req, openAIExchange(&or)), p, req.Seq, "call_local_")
	if !s.hold(r, rep.fault) {
		return
	}
	if f := rep.fault; f.Status != 0 {
		setRetryHeaders(w, f)
		typ, code := openAIErrorType(f.Status)
		writeOpenAIErrorParam(w, id, f.Status, orDefault(f.ErrorType, typ), orDefault(f.Message, defaultMessage(f.Status)), "", orDefault(f.Code, code))
		return
	}
	chatID := fmt.Sprintf("chatcmpl-local-%06d", req.Seq)
	created := s.clock.Now().Unix()
	w.Header().Set("X-Request-Id", id)
	if or.Stream {
		s.streamOpenAI(w, chatID, created, &or, p, rep)
		return
	}
	switch rep.fault.Midstream {
	case DropConnection:
		dropConnection(w)
	case ErrorEvent:
		writeOpenAIError(w, id, http.StatusInternalServerError, orDefault(rep.fault.ErrorType, "server_error"), orDefault(rep.fault.Message, "The server had an error while processing your request."))
		return
	}
	s.responseStarted(p)
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if t := rep.text(); t != "" {
		msg["content"] = t
	}
	if len(rep.calls) > 0 {
		var calls []any
		for _, c := range rep.calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": chatID, "object": "chat.completion", "created": created, "model": or.Model,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": openAIFinish(rep)}},
		"usage":              s.openAIUsage(rep.usage),
		"system_fingerprint": "fp_local",
		"service_tier":       "default",
	})
}

// openAIFinish is the finish_reason of a reply.
func openAIFinish(rep reply) string {
	switch {
	case rep.stop != "":
		return rep.stop
	case len(rep.calls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

// openAIUsage is the usage object of Chat Completions: prompt_tokens
// includes the cached tokens. With Config.OmitCachedTokens it has no
// prompt_tokens_details, as vLLM's and Ollama's have not.
func (s *Server) openAIUsage(u Usage) map[string]any {
	prompt := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	usage := map[string]any{
		"prompt_tokens":     prompt,
		"completion_tokens": u.OutputTokens,
		"total_tokens":      prompt + u.OutputTokens,
		"prompt_tokens_details": map[string]int{
			"cached_tokens": u.CacheReadInputTokens, "cache_write_tokens": u.CacheCreationInputTokens, "audio_tokens": 0,
		},
		"completion_tokens_details": map[string]int{
			"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
	if s.omitCached {
		delete(usage, "prompt_tokens_details")
	}
	return usage
}

// streamOpenAI sends a reply as the Chat Completions SSE stream.
func (s *Server) streamOpenAI(w http.ResponseWriter, chatID string, created int64, or *OpenAIRequest, p prompt, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	includeUsage := or.StreamOptions != nil && or.StreamOptions.IncludeUsage
	send := func(data []byte) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{
			"id": chatID, "object": "chat.completion.chunk", "created": created, "model": or.Model,
			"system_fingerprint": "fp_local",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if includeUsage {
			c["usage"] = nil
		}
		b, _ := json.Marshal(c)
		send(b)
	}
	sent := 0
	fault := func() bool {
		f := rep.fault
		if f.Midstream == NoMidstream || sent < f.AfterDeltas {
			return false
		}
		if f.Midstream == DropConnection {
			dropConnection(w)
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": orDefault(f.Message, "The server had an error while processing your request."),
			"type":    orDefault(f.ErrorType, "server_error"), "param": nil, "code": nil,
		}})
		send(b)
		return true
	}

	s.responseStarted(p)
	chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	for _, c := range rep.chunks {
		if fault() {
			return
		}
		chunk(map[string]any{"content": c}, nil)
		sent++
	}
	for i, c := range rep.calls {
		for j, frag := range c.ArgChunks {
			if fault() {
				return
			}
			call := map[string]any{"index": i, "function": map[string]any{"arguments": frag}}
			if j == 0 {
				call = map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": frag}}
			}
			chunk(map[string]any{"tool_calls": []any{call}}, nil)
			sent++
		}
	}
	if fault() {
		return
	}
	chunk(map[string]any{}, openAIFinish(rep))
	if includeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": chatID, "object": "chat.completion.chunk", "created": created, "model": or.Model,
			"system_fingerprint": "fp_local", "choices": []any{}, "usage": s.openAIUsage(rep.usage),
		})
		send(b)
	}
	send([]byte("[DONE]"))
}

// validateOpenAI checks a request the way Chat Completions does for what
// our providers send; it returns the 400 message and param, or "".
func validateOpenAI(or *OpenAIRequest) (msg, param string) {
	switch {
	case or.Model == "":
		return "you must provide a model parameter", "model"
	case len(or.Messages) == 0:
		return "[] is too short - 'messages'", "messages"
	case or.StreamOptions != nil && !or.Stream:
		return "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"
	}
	for i, t := range or.Tools {
		if t.Function.Name == "" {
			return fmt.Sprintf("Missing required parameter: 'tools[%d].function.name'.", i), fmt.Sprintf("tools[%d].function.name", i)
		}
	}
	if msg, param := validateOpenAIResponseFormat(or.ResponseFormat); msg != "" {
		return msg, param
	}
	roles := map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true, "function": true}
	var open []string // tool_call ids of the last assistant message not yet answered
	openAt := -1
	for i, m := range or.Messages {
		if !roles[m.Role] {
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role), fmt.Sprintf("messages[%d].role", i)
		}
		if m.Role == "tool" {
			k := indexOf(open, m.ToolCallID)
			if openAt < 0 || k < 0 {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", fmt.Sprintf("messages.[%d].role", i)
			}
			open = append(open[:k], open[k+1:]...)
			continue
		}
		if len(open) > 0 {
			break
		}
		openAt = -1
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			openAt = i
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(open, ", "), fmt.Sprintf("messages.[%d].role", openAt)
	}
	return "", ""
}

func indexOf(ids []string, id string) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// openAIPrompt canonicalises a Chat Completions request into prefix
// blocks: tools, then one block per message. Its cache entries are routed
// by prompt_cache_key.
func openAIPrompt(or *OpenAIRequest, key string, start time.Time) prompt {
	p := prompt{api: OpenAI, key: key, model: or.Model, start: start, route: or.PromptCacheKey, retention: or.PromptCacheRetention, plan: &cachePlan{}}
	for _, t := range or.Tools {
		p.blocks = append(p.blocks, promptBlock{kind: "tool", bytes: canonicalBlock(t.Raw)})
	}
	for _, m := range or.Messages {
		kind := "message"
		if m.Role == "system" || m.Role == "developer" {
			kind = "system"
		}
		p.blocks = append(p.blocks, promptBlock{kind: kind, bytes: canonicalBlock(m.Raw)})
	}
	return p
}

// openAIExchange is what the offline model reads of a request.
func openAIExchange(or *OpenAIRequest) exchange {
	var x exchange
	for _, t := range or.Tools {
		x.tools = append(x.tools, offeredTool{name: t.Function.Name, schema: t.Function.Parameters})
	}
	for _, m := range or.Messages {
		if m.Role == "user" {
			x.lastUser = m.Text()
		}
	}
	for i := len(or.Messages) - 1; i >= 0 && or.Messages[i].Role == "tool"; i-- {
		x.toolResults = append([]string{or.Messages[i].Text()}, x.toolResults...)
	}
	return x
}

// writeOpenAIError answers with Chat Completions' error body.
func writeOpenAIError(w http.ResponseWriter, reqID string, status int, typ, msg string) {
	writeOpenAIErrorParam(w, reqID, status, typ, msg, "", "")
}

// writeOpenAIErrorParam is writeOpenAIError with a param and a code.
func writeOpenAIErrorParam(w http.ResponseWriter, reqID string, status int, typ, msg, param, code string) {
	w.Header().Set("X-Request-Id", reqID)
	body := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if param != "" {
		body["param"] = param
	}
	if code != "" {
		body["code"] = code
	}
	writeJSON(w, status, map[string]any{"error": body})
}

// openAIErrorType is Chat Completions' error type and code for a status.
func openAIErrorType(status int) (typ, code string) {
	switch {
	case status == 429:
		return "requests", "rate_limit_exceeded"
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status >= 500:
		return "server_error", ""
	}
	return "invalid_request_error", ""
}

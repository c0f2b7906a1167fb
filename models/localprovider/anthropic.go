package localprovider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// AnthropicVersions are the anthropic-version header values the double
// accepts: the long-standing 2023-06-01 (the v1 Go SDK's) and 2026-10-21,
// which anthropic-sdk-go/v2 sends. Any other value is a 400, as on the API.
var AnthropicVersions = []string{"2023-06-01", "2026-10-21"}

// maxCacheMarkers is how many cache_control markers one request may carry.
const maxCacheMarkers = 4

// ThinkingSignature is the signature the double puts on a scripted
// thinking block.
const ThinkingSignature = "sig_local_thinking"

// statusOverloaded is Anthropic's 529, which net/http has no name for.
const statusOverloaded = 529

// AnthropicRequest is a decoded Messages request (the fields the double
// reads; Request.Body holds every byte sent).
type AnthropicRequest struct {
	Model     string `json:"model"`
	MaxTokens *int   `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	// System is the system prompt as text blocks (a string is one block).
	System       AnthropicBlocks    `json:"system"`
	Messages     []AnthropicMessage `json:"messages"`
	Tools        []AnthropicTool    `json:"tools"`
	ToolChoice   json.RawMessage    `json:"tool_choice"`
	Thinking     json.RawMessage    `json:"thinking"`
	CacheControl *CacheControl      `json:"cache_control"`
	// Speed is the inference speed mode ("fast"), as sent.
	Speed json.RawMessage `json:"speed"`
	// OutputConfig holds structured output's format and the effort.
	OutputConfig *AnthropicOutputConfig `json:"output_config"`
}

// AnthropicOutputConfig is a request's output_config.
type AnthropicOutputConfig struct {
	Format *AnthropicOutputFormat `json:"format"`
	Effort string                 `json:"effort"`
}

// AnthropicOutputFormat is output_config.format: {"type": "json_schema",
// "schema": {...}}.
type AnthropicOutputFormat struct {
	Type   string         `json:"type"`
	Schema map[string]any `json:"schema"`
}

// AnthropicMessage is one message of a Messages request.
type AnthropicMessage struct {
	Role string `json:"role"`
	// Content is the message's blocks (a string is one text block).
	Content AnthropicBlocks `json:"content"`
}

// AnthropicBlocks is content given either as a string or as blocks.
type AnthropicBlocks []AnthropicBlock

// UnmarshalJSON accepts a string (one text block) or an array of blocks.
func (b *AnthropicBlocks) UnmarshalJSON(data []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte(`"`)) {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = AnthropicBlocks{{Type: "text", Text: s, Raw: data}}
		return nil
	}
	var blocks []AnthropicBlock
	if err := json.Unmarshal(data, &blocks); err != nil {
		return err
	}
	*b = blocks
	return nil
}

// AnthropicBlock is one content block: text, tool_use, tool_result, or
// another type the double keeps but does not read.
type AnthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`

	CacheControl *CacheControl `json:"cache_control,omitempty"`
	// Raw is the block's JSON as sent.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw bytes beside the decoded fields.
func (b *AnthropicBlock) UnmarshalJSON(data []byte) error {
	type plain AnthropicBlock
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*b = AnthropicBlock(p)
	b.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// ResultText is a tool_result's content as text (text blocks joined).
func (b AnthropicBlock) ResultText() string {
	if s, ok := contentText(b.Content); ok {
		return s
	}
	return string(b.Content)
}

// contentText reads content both APIs send as a string or a list of
// parts with "text" fields (joined); false when it is neither.
func contentText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// AnthropicTool is one entry of tools.
type AnthropicTool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl *CacheControl   `json:"cache_control,omitempty"`
	// Raw is the tool's JSON as sent.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw bytes beside the decoded fields.
func (t *AnthropicTool) UnmarshalJSON(data []byte) error {
	type plain AnthropicTool
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*t = AnthropicTool(p)
	t.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// CacheControl is a cache_control marker.
type CacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// serveAnthropic answers /v1/messages (count false) and
// /v1/messages/count_tokens (count true).
func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request, count bool) {
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key = bearer(r)
	}
	req, err := s.newRequest(r, Anthropic, key)
	req.Count = count
	var ar AnthropicRequest
	if err == nil {
		err = json.Unmarshal(req.Body, &ar)
		if err == nil {
			req.Anthropic = &ar
		}
	}
	s.record(&req)
	id := s.requestID()
	switch v := r.Header.Get("Anthropic-Version"); {
	case key == "":
		writeAnthropicError(w, id, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	case v == "":
		writeAnthropicError(w, id, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	case !slices.Contains(AnthropicVersions, v):
		writeAnthropicError(w, id, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("anthropic-version: invalid version %q; this double serves %s", v, strings.Join(AnthropicVersions, ", ")))
		return
	case err != nil:
		writeAnthropicError(w, id, http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON: "+err.Error())
		return
	}
	if msg := validateAnthropic(&ar, count); msg != "" {
		writeAnthropicError(w, id, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	p := anthropicPrompt(&ar, req.Key, req.Time)
	if count {
		writeJSON(w, http.StatusOK, map[string]int{"input_tokens": s.promptTokens(p)})
		return
	}
	rep := s.prepare(s.turnFor(req, anthropicExchange(&ar)), p, req.Seq, "toolu_local_")
	if !s.hold(r, rep.fault) {
		return
	}
	if f := rep.fault; f.Status != 0 {
		setRetryHeaders(w, f)
		writeAnthropicError(w, id, f.Status, orDefault(f.ErrorType, anthropicErrorType(f.Status)), orDefault(f.Message, defaultMessage(f.Status)))
		return
	}
	msgID := fmt.Sprintf("msg_local_%06d", req.Seq)
	if ar.Stream {
		s.streamAnthropic(w, id, msgID, &ar, p, rep)
		return
	}
	switch rep.fault.Midstream {
	case DropConnection:
		dropConnection(w)
	case ErrorEvent:
		writeAnthropicError(w, id, statusOverloaded, orDefault(rep.fault.ErrorType, "overloaded_error"), orDefault(rep.fault.Message, "Overloaded"))
		return
	}
	s.responseStarted(p)
	w.Header().Set("Request-Id", id)
	writeJSON(w, http.StatusOK, anthropicMessage(msgID, ar.Model, rep, true))
}

// anthropicStop is the stop_reason of a reply.
func anthropicStop(rep reply) string {
	switch {
	case rep.stop != "":
		return rep.stop
	case len(rep.calls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// anthropicMessage is the Message object of a reply; final false is the
// message_start form (empty content, no stop reason, placeholder output).
func anthropicMessage(id, model string, rep reply, final bool) map[string]any {
	content := []any{}
	var stop any
	usage := anthropicUsage(rep.usage)
	if final {
		if rep.thinking != "" {
			content = append(content, map[string]any{"type": "thinking", "thinking": rep.thinking, "signature": ThinkingSignature})
		}
		if t := rep.text(); t != "" {
			content = append(content, map[string]any{"type": "text", "text": t})
		}
		for _, c := range rep.calls {
			input := json.RawMessage(c.Args)
			if !validJSON(c.Args) {
				input, _ = json.Marshal(c.Args)
			}
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		}
		if rep.after != "" {
			content = append(content, map[string]any{"type": "text", "text": rep.after})
		}
		stop = anthropicStop(rep)
	} else {
		usage["output_tokens"] = 1
	}
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
	}
}

// anthropicUsage is the usage object of the Messages API.
func anthropicUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.InputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens,
		"cache_read_input_tokens":     u.CacheReadInputTokens,
		"cache_creation":              map[string]int{"ephemeral_5m_input_tokens": u.Ephemeral5mInputTokens, "ephemeral_1h_input_tokens": u.Ephemeral1hInputTokens},
		"output_tokens":               u.OutputTokens,
		"service_tier":                "standard",
	}
}

// streamAnthropic sends a reply as the Messages SSE stream.
func (s *Server) streamAnthropic(w http.ResponseWriter, reqID, msgID string, ar *AnthropicRequest, p prompt, rep reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", reqID)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	s.responseStarted(p)
	send("message_start", map[string]any{"type": "message_start", "message": anthropicMessage(msgID, ar.Model, rep, false)})
	send("ping", map[string]any{"type": "ping"})

	sent := 0
	// fault reports whether the stream must end here, after sending what
	// the injected fault calls for.
	fault := func() bool {
		f := rep.fault
		if f.Midstream == NoMidstream || sent < f.AfterDeltas {
			return false
		}
		if f.Midstream == DropConnection {
			dropConnection(w)
		}
		send("error", map[string]any{"type": "error", "error": map[string]string{
			"type":    orDefault(f.ErrorType, "overloaded_error"),
			"message": orDefault(f.Message, "Overloaded"),
		}, "request_id": reqID})
		return true
	}
	delta := func(index int, d map[string]any) bool {
		if fault() {
			return false
		}
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": d})
		sent++
		return true
	}

	index := 0
	if rep.thinking != "" {
		half := len(rep.thinking) / 2
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, part := range []string{rep.thinking[:half], rep.thinking[half:]} {
			if !delta(index, map[string]any{"type": "thinking_delta", "thinking": part}) {
				return
			}
		}
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "signature_delta", "signature": ThinkingSignature}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if len(rep.chunks) > 0 {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range rep.chunks {
			if !delta(index, map[string]any{"type": "text_delta", "text": c}) {
				return
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range rep.calls {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{},
		}})
		for _, frag := range c.ArgChunks {
			if !delta(index, map[string]any{"type": "input_json_delta", "partial_json": frag}) {
				return
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if rep.after != "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		if !delta(index, map[string]any{"type": "text_delta", "text": rep.after}) {
			return
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	if fault() {
		return
	}
	usage := anthropicUsage(rep.usage)
	delete(usage, "cache_creation")
	delete(usage, "service_tier")
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": anthropicStop(rep), "stop_sequence": nil}, "usage": usage})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// validateAnthropic checks a request the way the Messages API does for what
// our providers send; it returns the 400 message, or "" when it is valid.
func validateAnthropic(ar *AnthropicRequest, count bool) string {
	switch {
	case ar.Model == "":
		return "model: Field required"
	case !count && ar.MaxTokens == nil:
		return "max_tokens: Field required"
	case !count && *ar.MaxTokens < 0:
		return "max_tokens: Input should be greater than or equal to 0"
	case !count && *ar.MaxTokens == 0 && ar.Stream:
		return "max_tokens: 0 (cache pre-warming) cannot be combined with stream"
	case len(ar.Messages) == 0:
		return "messages: at least one message is required"
	}
	names := map[string]bool{}
	for i, t := range ar.Tools {
		if t.Name == "" {
			return fmt.Sprintf("tools.%d.name: Field required", i)
		}
		if t.Type == "" && len(t.InputSchema) == 0 {
			return fmt.Sprintf("tools.%d.input_schema: Field required", i)
		}
		if names[t.Name] {
			return "tools: Tool names must be unique."
		}
		names[t.Name] = true
	}
	for i, m := range ar.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if len(m.Content) == 0 && !(i == len(ar.Messages)-1 && m.Role == "assistant") {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
	}
	if msg := validateToolPairs(ar.Messages); msg != "" {
		return msg
	}
	if msg := validateAnthropicOutput(ar.OutputConfig); msg != "" {
		return msg
	}
	return validateMarkers(ar)
}

// validateToolPairs checks that every tool_result answers a tool_use of the
// turn just before it, that the tool_result blocks come first in their
// turn, and that every tool_use is answered in the next turn. Consecutive
// messages of one role are one turn, as the API merges them.
func validateToolPairs(msgs []AnthropicMessage) string {
	type turn struct {
		role  string
		first int
		uses  []string
		seen  map[string]bool
	}
	var turns []turn
	turnOf := make([]int, len(msgs))
	for i, m := range msgs {
		if len(turns) == 0 || turns[len(turns)-1].role != m.Role {
			turns = append(turns, turn{role: m.Role, first: i, seen: map[string]bool{}})
		}
		turnOf[i] = len(turns) - 1
		t := &turns[len(turns)-1]
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				t.uses = append(t.uses, b.ID)
			}
		}
	}
	// other is where a turn first holds a block that is not a
	// tool_result: the API wants a turn's tool_result blocks first.
	type at struct{ msg, block int }
	other := map[int]at{}
	for i, m := range msgs {
		ti := turnOf[i]
		for j, b := range m.Content {
			if b.Type != "tool_result" {
				if _, ok := other[ti]; !ok {
					other[ti] = at{i, j}
				}
				continue
			}
			if o, ok := other[ti]; ok && ti > 0 && len(turns[ti-1].uses) > 0 {
				return fmt.Sprintf("messages.%d.content.%d: `tool_result` blocks must come first in the user turn after a `tool_use` turn, but messages.%d.content.%d (%s) comes before it. Put the `tool_result` blocks before any other content.", i, j, o.msg, o.block, msgs[o.msg].Content[o.block].Type)
			}
			if ti == 0 || !slices.Contains(turns[ti-1].uses, b.ToolUseID) {
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
			turns[ti].seen[b.ToolUseID] = true
		}
	}
	for k, t := range turns {
		if len(t.uses) == 0 || k+1 >= len(turns) {
			continue
		}
		var missing []string
		for _, id := range t.uses {
			if !turns[k+1].seen[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", t.first, strings.Join(missing, ", "))
		}
	}
	return ""
}

// validateMarkers checks the cache_control markers: at most four (the
// automatic one included), no 1h marker after a 5m one in prefix order
// (the automatic one comes last), none on a thinking block, and no
// explicit marker of another TTL on the block the automatic one lands on.
func validateMarkers(ar *AnthropicRequest) string {
	var markers []*CacheControl
	for _, t := range ar.Tools {
		if t.CacheControl != nil {
			markers = append(markers, t.CacheControl)
		}
	}
	for _, b := range ar.System {
		if b.CacheControl != nil {
			markers = append(markers, b.CacheControl)
		}
	}
	for _, m := range ar.Messages {
		for _, b := range m.Content {
			if b.CacheControl != nil {
				if isThinking(b.Type) {
					return "cache_control cannot be set on thinking blocks"
				}
				markers = append(markers, b.CacheControl)
			}
		}
	}
	n := len(markers)
	if ar.CacheControl != nil {
		n++
	}
	if n > maxCacheMarkers {
		return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxCacheMarkers, n)
	}
	if auto := ar.CacheControl; auto != nil {
		if last := lastEligible(ar); last != nil && last.CacheControl != nil && ttlName(last.CacheControl) != ttlName(auto) {
			return fmt.Sprintf("cache_control: the automatic cache_control (ttl=%q) lands on a block that already has a cache_control with ttl=%q", ttlName(auto), ttlName(last.CacheControl))
		}
		markers = append(markers, auto)
	}
	seen5m := false
	for _, m := range markers {
		switch m.TTL {
		case "", "5m":
			seen5m = true
		case "1h":
			if seen5m {
				return "a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block"
			}
		default:
			return fmt.Sprintf("cache_control.ttl: Input should be '5m' or '1h', not %q", m.TTL)
		}
	}
	return ""
}

// ttlName is a marker's TTL with the default spelled out.
func ttlName(c *CacheControl) string { return orDefault(c.TTL, "5m") }

// lastEligible is the message block the automatic marker lands on: the
// last one that is not a thinking block, or nil.
func lastEligible(ar *AnthropicRequest) *AnthropicBlock {
	for i := len(ar.Messages) - 1; i >= 0; i-- {
		c := ar.Messages[i].Content
		for j := len(c) - 1; j >= 0; j-- {
			if !isThinking(c[j].Type) {
				return &c[j]
			}
		}
	}
	return nil
}

// isThinking reports whether a block type is a thinking block, which is
// cached as part of the prefix but takes no marker.
func isThinking(typ string) bool { return typ == "thinking" || typ == "redacted_thinking" }

// anthropicPrompt canonicalises a Messages request into prefix blocks, in
// the order the tiers of reference §1.3 invalidate: tools (a change busts
// everything), the ⟨speed, web search, citations⟩ tier and the system
// blocks (a change keeps the tools), the ⟨tool_choice, thinking/effort,
// images⟩ tier (a change keeps tools and system), then the message
// blocks. Web-search server tools are the toggle, not tool blocks.
func anthropicPrompt(ar *AnthropicRequest, key string, start time.Time) prompt {
	p := prompt{api: Anthropic, key: key, model: ar.Model, start: start, marker: ar.CacheControl, plan: &cachePlan{}}
	var webSearch []json.RawMessage
	var webMarker *CacheControl
	for _, t := range ar.Tools {
		if strings.HasPrefix(t.Type, "web_search") {
			webSearch = append(webSearch, canonicalBlock(t.Raw))
			if t.CacheControl != nil {
				webMarker = t.CacheControl
			}
			continue
		}
		p.blocks = append(p.blocks, promptBlock{kind: "tool", bytes: canonicalBlock(t.Raw), marker: t.CacheControl, eligible: true})
	}
	citations, images := false, false
	for _, m := range ar.Messages {
		for _, b := range m.Content {
			images = images || b.Type == "image"
			citations = citations || citationsOn(b.Raw)
		}
	}
	tier := tierBlock(map[string]any{"speed": ar.Speed, "web_search": webSearch, "citations": citations})
	tier.marker = webMarker
	p.blocks = append(p.blocks, tier)
	for _, b := range ar.System {
		p.blocks = append(p.blocks, promptBlock{kind: "system", bytes: canonicalBlock(b.Raw), marker: b.CacheControl, eligible: true})
	}
	effort := ""
	if ar.OutputConfig != nil {
		effort = ar.OutputConfig.Effort
	}
	p.blocks = append(p.blocks, tierBlock(map[string]any{"tool_choice": ar.ToolChoice, "thinking": ar.Thinking, "effort": effort, "images": images}))
	for _, m := range ar.Messages {
		for _, b := range m.Content {
			p.blocks = append(p.blocks, promptBlock{kind: "message", role: m.Role, bytes: canonicalBlock(b.Raw), marker: b.CacheControl, eligible: !isThinking(b.Type)})
		}
	}
	return p
}

// citationsOn reports whether a content block turns citations on.
func citationsOn(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"citations"`)) {
		return false
	}
	var b struct {
		Citations *struct {
			Enabled bool `json:"enabled"`
		} `json:"citations"`
	}
	return json.Unmarshal(raw, &b) == nil && b.Citations != nil && b.Citations.Enabled
}

// anthropicExchange is what the offline model reads of a Messages request.
func anthropicExchange(ar *AnthropicRequest) exchange {
	var x exchange
	for _, t := range ar.Tools {
		x.tools = append(x.tools, offeredTool{name: t.Name, schema: t.InputSchema})
	}
	for i, m := range ar.Messages {
		if m.Role != "user" {
			continue
		}
		var text []string
		var results []string
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "tool_result":
				results = append(results, b.ResultText())
			}
		}
		if len(text) > 0 {
			x.lastUser = strings.Join(text, "\n")
		}
		if i == len(ar.Messages)-1 {
			x.toolResults = results
		}
	}
	return x
}

// writeAnthropicError answers with the Messages API's error body.
func writeAnthropicError(w http.ResponseWriter, reqID string, status int, typ, msg string) {
	w.Header().Set("Request-Id", reqID)
	writeJSON(w, status, map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": typ, "message": msg},
		"request_id": reqID,
	})
}

// anthropicErrorType is the Messages API's error type for a status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// defaultMessage is an injected error's message when the test gave none.
func defaultMessage(status int) string {
	switch status {
	case 429:
		return "Rate limited by the local provider double (injected fault)."
	case 529:
		return "Overloaded (injected fault)."
	}
	return fmt.Sprintf("%s (injected fault).", http.StatusText(status))
}

// setRetryHeaders sends a fault's retry-after and x-should-retry headers.
func setRetryHeaders(w http.ResponseWriter, f Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.RetryAfterMs != "" {
		w.Header().Set("Retry-After-Ms", f.RetryAfterMs)
	}
	if f.ShouldRetry != "" {
		w.Header().Set("X-Should-Retry", f.ShouldRetry)
	}
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

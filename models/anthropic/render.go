package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// Render is the one function that turns a conversation and call options
// into the request this model sends; hooks see (and prompt caching will
// mark) exactly its result.
//
//   - System messages become the system blocks, in order, wherever they
//     stand in the history (the Messages API takes a system prompt only
//     at the top).
//   - Human messages are user turns; AI messages assistant turns, their
//     content blocks in order (thinking blocks, with their signatures,
//     where they stood) and their tool calls tool_use blocks, each id
//     once: a tool_use block already in the content (Parse keeps them
//     there) is sent in its place with the tool call's arguments, so an
//     edit of tool_calls is what the model sees; tool calls not in the
//     content follow it. An invalid tool call, or a tool_use block with
//     no tool call, is sent (input {}) only when a tool message answers
//     it: the API wants every tool_use answered and every tool_result to
//     answer one.
//   - Consecutive tool messages are one user turn of tool_result blocks,
//     is_error set for status "error". The API merges consecutive user
//     messages into one turn and wants its tool_result blocks first, so a
//     human message between an AI message's tool calls and their results
//     (AI → Human → Tool) is sent after the results, in one user message.
//   - Content blocks are passed through as they are (cache_control
//     included), without the "index" and "partial_json" keys streaming
//     adds; empty text is left out, as the API refuses it.
func (m *Model) Render(messages []models.Message, opts *models.CallOptions) (anthropic.MessageNewParams, error) {
	var o models.CallOptions
	if opts != nil {
		o = *opts
	}
	p := anthropic.MessageNewParams{Model: anthropic.Model(m.model), MaxTokens: int64(m.maxTokens)}
	if o.MaxTokens > 0 {
		p.MaxTokens = int64(o.MaxTokens)
	}
	answered := map[string]bool{}
	for _, msg := range messages {
		if msg.Type == models.TypeTool {
			answered[msg.ToolCallID] = true
		}
	}
	for i := 0; i < len(messages); i++ {
		msg := messages[i]
		switch msg.Type {
		case models.TypeSystem:
			blocks, err := systemBlocks(msg.Content)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d (system): %w", i, err)
			}
			p.System = append(p.System, blocks...)
		case models.TypeHuman:
			blocks, err := contentBlocks(msg.Content)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d (human): %w", i, err)
			}
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		case models.TypeAI, models.TypeAIChunk:
			blocks, err := assistantBlocks(msg, answered)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d (ai): %w", i, err)
			}
			if len(blocks) > 0 {
				p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
			}
		case models.TypeTool:
			var results []anthropic.ContentBlockParamUnion
			for ; i < len(messages) && messages[i].Type == models.TypeTool; i++ {
				r, err := toolResult(messages[i])
				if err != nil {
					return p, fmt.Errorf("anthropic: message %d (tool): %w", i, err)
				}
				results = append(results, r)
			}
			i--
			p.Messages = append(p.Messages, anthropic.NewUserMessage(results...))
		default:
			return p, fmt.Errorf("anthropic: message %d: a %q message cannot be sent to a model", i, msg.Type)
		}
	}
	p.Messages = toolResultsFirst(p.Messages)
	for _, t := range o.Tools {
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: toolParam(t)})
	}
	switch o.ToolChoice {
	case "":
	case models.ToolChoiceAuto:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{}}
	case models.ToolChoiceNone:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case models.ToolChoiceAny:
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	default:
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(o.ToolChoice)
	}
	p.StopSequences = o.Stop
	if o.Response != nil {
		p.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: closedSchema(o.Response.Schema)}
	}
	// The v2 SDK has no temperature field; the API still takes one.
	if o.Temperature != nil || len(o.Extra) > 0 {
		extra := make(map[string]any, len(o.Extra)+1)
		if o.Temperature != nil {
			extra["temperature"] = *o.Temperature
		}
		for k, v := range o.Extra {
			extra[k] = v
		}
		p.SetExtraFields(extra)
	}
	return p, nil
}

// toolResultsFirst merges each run of consecutive user messages that
// holds a tool_result block after some other block into one message with
// the tool_result blocks first, the other blocks after them, each group
// in its order. Runs already in order are left as they are.
func toolResultsFirst(msgs []anthropic.MessageParam) []anthropic.MessageParam {
	out := make([]anthropic.MessageParam, 0, len(msgs))
	for i := 0; i < len(msgs); {
		j := i + 1
		for msgs[i].OfUser != nil && j < len(msgs) && msgs[j].OfUser != nil {
			j++
		}
		var results, others []anthropic.ContentBlockParamUnion
		late := false
		for _, m := range msgs[i:j] {
			if m.OfUser == nil {
				continue
			}
			for _, b := range m.OfUser.Content {
				if b.OfToolResult == nil {
					others = append(others, b)
					continue
				}
				late = late || len(others) > 0
				results = append(results, b)
			}
		}
		if late {
			out = append(out, anthropic.NewUserMessage(append(results, others...)...))
		} else {
			out = append(out, msgs[i:j]...)
		}
		i = j
	}
	return out
}

// toolParam is a tool as the API declares it: the schema's properties
// and required list in their fields, its other keywords kept.
func toolParam(t models.ToolSpec) *anthropic.ToolParam {
	tp := &anthropic.ToolParam{Name: t.Name}
	if t.Description != "" {
		tp.Description = anthropic.String(t.Description)
	}
	for k, v := range t.Parameters {
		switch k {
		case "type":
		case "properties":
			tp.InputSchema.Properties = v
		case "required":
			tp.InputSchema.Required = stringList(v)
		default:
			if tp.InputSchema.ExtraFields == nil {
				tp.InputSchema.ExtraFields = map[string]any{}
			}
			tp.InputSchema.ExtraFields[k] = v
		}
	}
	return tp
}

func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, s := range l {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// systemBlocks are a system message's text blocks.
func systemBlocks(c models.Content) ([]anthropic.TextBlockParam, error) {
	if !c.IsList() {
		if c.Text == "" {
			return nil, nil
		}
		return []anthropic.TextBlockParam{{Text: c.Text}}, nil
	}
	var out []anthropic.TextBlockParam
	for _, b := range c.Blocks {
		if b.Type() != "text" {
			return nil, fmt.Errorf("a system message holds only text blocks, not %q", b.Type())
		}
		var tb anthropic.TextBlockParam
		if err := convertBlock(b, &tb); err != nil {
			return nil, err
		}
		if tb.Text != "" {
			out = append(out, tb)
		}
	}
	return out, nil
}

// contentBlocks are a user turn's blocks: a string is one text block.
func contentBlocks(c models.Content) ([]anthropic.ContentBlockParamUnion, error) {
	if !c.IsList() {
		if c.Text == "" {
			return nil, nil
		}
		return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(c.Text)}, nil
	}
	out := make([]anthropic.ContentBlockParamUnion, 0, len(c.Blocks))
	for _, b := range c.Blocks {
		var err error
		if out, err = appendBlock(out, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendBlock appends a content block as the API takes it; an empty text
// block, which the API refuses, is left out.
func appendBlock(out []anthropic.ContentBlockParamUnion, b models.Block) ([]anthropic.ContentBlockParamUnion, error) {
	if b.Type() == "text" && b["text"] == "" {
		return out, nil
	}
	var u anthropic.ContentBlockParamUnion
	if err := convertBlock(b, &u); err != nil {
		return nil, err
	}
	return append(out, u), nil
}

// assistantBlocks are an AI message's content blocks and tool calls.
func assistantBlocks(msg models.Message, answered map[string]bool) ([]anthropic.ContentBlockParamUnion, error) {
	calls := make(map[string]models.ToolCall, len(msg.ToolCalls))
	for _, c := range msg.ToolCalls {
		calls[c.ID] = c
	}
	sent := map[string]bool{}
	var out []anthropic.ContentBlockParamUnion
	if msg.Content.IsList() {
		for _, b := range msg.Content.Blocks {
			if b.Type() == "tool_use" {
				// The tool call of the same id is authoritative for the
				// arguments; each id is sent once; a tool_use with no
				// call is sent (input {} unless an object) only when a
				// tool message answers it, as the API wants every
				// tool_use answered.
				id, _ := b["id"].(string)
				if sent[id] {
					continue
				}
				c, ok := calls[id]
				if !ok {
					if !answered[id] {
						continue
					}
					name, _ := b["name"].(string)
					input, _ := b["input"].(map[string]any)
					c = models.ToolCall{ID: id, Name: name, Args: input}
				}
				out = append(out, anthropic.NewToolUseBlock(c.ID, args(c.Args), c.Name))
				sent[id] = true
				continue
			}
			var err error
			if out, err = appendBlock(out, b); err != nil {
				return nil, err
			}
		}
	} else if msg.Content.Text != "" {
		out = append(out, anthropic.NewTextBlock(msg.Content.Text))
	}
	for _, c := range msg.ToolCalls {
		if !sent[c.ID] {
			out = append(out, anthropic.NewToolUseBlock(c.ID, args(c.Args), c.Name))
		}
	}
	for _, c := range msg.InvalidToolCalls {
		if answered[c.ID] && !sent[c.ID] {
			out = append(out, anthropic.NewToolUseBlock(c.ID, map[string]any{}, c.Name))
		}
	}
	return out, nil
}

func args(a map[string]any) map[string]any {
	if a == nil {
		return map[string]any{}
	}
	return a
}

// toolResult is a tool message as a tool_result block.
func toolResult(msg models.Message) (anthropic.ContentBlockParamUnion, error) {
	r := &anthropic.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
	if msg.Status == models.StatusError {
		r.IsError = anthropic.Bool(true)
	}
	if !msg.Content.IsList() {
		if msg.Content.Text != "" {
			r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: msg.Content.Text}}}
		}
		return anthropic.ContentBlockParamUnion{OfToolResult: r}, nil
	}
	for _, b := range msg.Content.Blocks {
		var u anthropic.ToolResultBlockParamContentUnion
		if err := convertBlock(b, &u); err != nil {
			return anthropic.ContentBlockParamUnion{}, err
		}
		r.Content = append(r.Content, u)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: r}, nil
}

// convertBlock passes a content block through to an SDK param by its
// JSON, leaving out the keys LangChain's streaming adds.
func convertBlock(b models.Block, dst any) error {
	if _, ok := b["index"]; ok {
		c := make(models.Block, len(b))
		for k, v := range b {
			if k != "index" && k != "partial_json" {
				c[k] = v
			}
		}
		b = c
	}
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("content block %q: %w", b.Type(), err)
	}
	if err := json.Unmarshal(data, dst); err != nil {
		return fmt.Errorf("content block %q cannot be sent to Anthropic: %w", b.Type(), err)
	}
	return nil
}

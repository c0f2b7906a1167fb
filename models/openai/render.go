package openai

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/superstep-dev/superstep/models"
)

// Render is the one function that turns a conversation and call options
// into the Chat Completions request this model sends; hooks see exactly
// its result.
//
//   - System messages are "system" messages, human messages "user"
//     messages (content blocks passed through as content parts), tool
//     messages "tool" messages.
//   - AI messages are "assistant" messages with their text and their
//     tool calls as function calls (arguments as JSON). An invalid tool
//     call is sent with its arguments as written only when a tool
//     message answers it, as the API wants every call answered.
//   - Tools are function tools; ToolChoiceAny is "required"; a response
//     schema is response_format json_schema, with strict taken from the
//     schema's own top-level "strict" (else false), as langchain-openai
//     does. A strict schema must close its objects
//     (additionalProperties: false) and require every property; the API
//     refuses it otherwise, and so does the double.
func (m *Model) Render(messages []models.Message, opts *models.CallOptions) (openai.ChatCompletionNewParams, error) {
	var o models.CallOptions
	if opts != nil {
		o = *opts
	}
	p := openai.ChatCompletionNewParams{Model: m.cfg.Model}
	if n := max(o.MaxTokens, 0); n > 0 || m.cfg.MaxTokens > 0 {
		if n == 0 {
			n = m.cfg.MaxTokens
		}
		if m.cfg.LegacyMaxTokens {
			p.MaxTokens = openai.Int(int64(n))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(n))
		}
	}
	answered := map[string]bool{}
	for _, msg := range messages {
		if msg.Type == models.TypeTool {
			answered[msg.ToolCallID] = true
		}
	}
	for i, msg := range messages {
		var (
			mp  openai.ChatCompletionMessageParamUnion
			err error
		)
		switch msg.Type {
		case models.TypeSystem:
			mp = openai.SystemMessage(msg.Text())
		case models.TypeHuman:
			mp, err = userMessage(msg.Content)
		case models.TypeAI, models.TypeAIChunk:
			mp = assistantMessage(msg, answered)
		case models.TypeTool:
			mp = openai.ToolMessage(toolContent(msg.Content), msg.ToolCallID)
		default:
			err = fmt.Errorf("a %q message cannot be sent to a model", msg.Type)
		}
		if err != nil {
			return p, fmt.Errorf("openai: message %d (%s): %w", i, msg.Type, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range o.Tools {
		fd := openai.FunctionDefinitionParam{Name: t.Name, Parameters: openai.FunctionParameters(t.Parameters)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	switch o.ToolChoice {
	case "":
	case models.ToolChoiceAuto, models.ToolChoiceNone:
		p.ToolChoice.OfAuto = openai.String(o.ToolChoice)
	case models.ToolChoiceAny:
		p.ToolChoice.OfAuto = openai.String("required")
	default:
		p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: o.ToolChoice})
	}
	if len(o.Stop) > 0 {
		p.Stop.OfStringArray = o.Stop
	}
	if o.Temperature != nil {
		p.Temperature = openai.Float(*o.Temperature)
	}
	if r := o.Response; r != nil {
		// As langchain-openai: strict is the schema's own top-level
		// "strict" when it has one (taken out of the schema), else false,
		// sent either way.
		schema, strict := r.Schema, false
		if st, ok := schema["strict"].(bool); ok {
			strict = st
			schema = make(map[string]any, len(r.Schema))
			for k, v := range r.Schema {
				if k != "strict" {
					schema[k] = v
				}
			}
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: r.Name, Schema: schema, Strict: openai.Bool(strict)}
		if js.Name == "" {
			js.Name = "response"
		}
		if r.Description != "" {
			js.Description = openai.String(r.Description)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}
	if len(o.Extra) > 0 {
		p.SetExtraFields(o.Extra)
	}
	return p, nil
}

// userMessage is a human message: a string, or content parts passed
// through (a text block is a text part as it is).
func userMessage(c models.Content) (openai.ChatCompletionMessageParamUnion, error) {
	if !c.IsList() {
		return openai.UserMessage(c.Text), nil
	}
	parts := make([]openai.ChatCompletionContentPartUnionParam, 0, len(c.Blocks))
	for _, b := range c.Blocks {
		data, err := json.Marshal(b)
		if err != nil {
			return openai.ChatCompletionMessageParamUnion{}, err
		}
		var part openai.ChatCompletionContentPartUnionParam
		if err := json.Unmarshal(data, &part); err != nil {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("content block %q cannot be sent to Chat Completions: %w", b.Type(), err)
		}
		parts = append(parts, part)
	}
	return openai.UserMessage(parts), nil
}

// assistantMessage is an AI message with its tool calls.
func assistantMessage(msg models.Message, answered map[string]bool) openai.ChatCompletionMessageParamUnion {
	a := &openai.ChatCompletionAssistantMessageParam{}
	if text := msg.Text(); text != "" || (len(msg.ToolCalls) == 0 && len(msg.InvalidToolCalls) == 0) {
		a.Content.OfString = openai.String(text)
	}
	for _, c := range msg.ToolCalls {
		args, _ := json.Marshal(c.Args)
		if c.Args == nil {
			args = []byte("{}")
		}
		a.ToolCalls = append(a.ToolCalls, functionCall(c.ID, c.Name, string(args)))
	}
	for _, c := range msg.InvalidToolCalls {
		if answered[c.ID] {
			a.ToolCalls = append(a.ToolCalls, functionCall(c.ID, c.Name, c.Args))
		}
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: a}
}

func functionCall(id, name, args string) openai.ChatCompletionMessageToolCallUnionParam {
	return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: args},
	}}
}

// toolContent is a tool message's content as text: a block list's text
// blocks joined (Content.String).
func toolContent(c models.Content) string { return c.String() }

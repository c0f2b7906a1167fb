package models

import (
	"context"
	"slices"
	"time"
)

// ChatModel is a chat model: a provider (Anthropic, an OpenAI-compatible
// server, the local offline model) behind one small interface. Node code
// calls it through Call, which streams the reply to the run's "messages"
// stream; agents and tests may call it directly.
type ChatModel interface {
	// Info names the provider and model (the ls_* metadata of streamed
	// chunks, and what the Studio labels a reply with).
	Info() ModelInfo
	// Generate sends the conversation and returns the reply, an "ai"
	// message with its usage and response metadata.
	Generate(ctx context.Context, messages []Message, opts *CallOptions) (Message, error)
	// Stream sends the conversation and calls onChunk with each
	// AIMessageChunk as it arrives; it returns the merged reply as an
	// "ai" message. An error from onChunk stops the stream and is
	// returned.
	Stream(ctx context.Context, messages []Message, opts *CallOptions, onChunk func(Message) error) (Message, error)
}

// ModelInfo describes a chat model.
type ModelInfo struct {
	// Provider is "anthropic", "openai", "local", ...
	Provider string
	// Model is the model's name as the provider knows it.
	Model string
	// Offline is true for the local model that answers without any
	// provider: pages showing its output say so.
	Offline bool
	// MaxTokens is the reply cap a call without CallOptions.MaxTokens
	// gets (0: none sent).
	MaxTokens int
}

// ToolSpec describes a tool a model may call.
type ToolSpec struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the tool's arguments, an object
	// schema.
	Parameters map[string]any
}

// Tool choice values for CallOptions.ToolChoice; any other value names
// the one tool the model must call.
const (
	ToolChoiceAuto = "auto" // the model decides (the default)
	ToolChoiceNone = "none" // no tool call
	ToolChoiceAny  = "any"  // at least one tool call
)

// ResponseSchema asks for a reply that is a JSON object matching Schema
// (structured output).
type ResponseSchema struct {
	Name        string
	Description string
	Schema      map[string]any
}

// CallOptions tune one call. The zero value (or nil) is the model's
// defaults.
type CallOptions struct {
	Tools []ToolSpec
	// ToolChoice is ToolChoiceAuto (""), ToolChoiceNone, ToolChoiceAny,
	// or a tool's name.
	ToolChoice string
	// MaxTokens caps the reply (0: the model's configured default).
	MaxTokens   int
	Temperature *float64
	Stop        []string
	// Response, when set, asks for structured output.
	Response *ResponseSchema
	// Extra holds provider-specific request fields, merged into the
	// request body as given.
	Extra map[string]any
}

func (o *CallOptions) clone() CallOptions {
	if o == nil {
		return CallOptions{}
	}
	c := *o
	c.Tools = slices.Clone(o.Tools)
	c.Stop = slices.Clone(o.Stop)
	return c
}

// WithTools returns m with tools bound: every call offers them, unless
// its options name tools of their own.
func WithTools(m ChatModel, tools ...ToolSpec) ChatModel {
	return &boundModel{ChatModel: m, tools: slices.Clone(tools)}
}

type boundModel struct {
	ChatModel
	tools []ToolSpec
}

func (b *boundModel) opts(o *CallOptions) *CallOptions {
	c := o.clone()
	if len(c.Tools) == 0 {
		c.Tools = b.tools
	}
	return &c
}

func (b *boundModel) Generate(ctx context.Context, messages []Message, opts *CallOptions) (Message, error) {
	return b.ChatModel.Generate(ctx, messages, b.opts(opts))
}

func (b *boundModel) Stream(ctx context.Context, messages []Message, opts *CallOptions, onChunk func(Message) error) (Message, error) {
	return b.ChatModel.Stream(ctx, messages, b.opts(opts), onChunk)
}

// Request is a provider request about to be sent, as a Hooks function
// sees it. Params is the provider SDK's own request value, as a pointer
// the hook may change (for example *anthropic.MessageNewParams); every
// provider renders it with one function, so a hook sees exactly what
// will be sent.
type Request struct {
	Provider string
	Model    string
	Messages []Message
	Options  CallOptions
	Params   any
	// Stream is true when the reply is streamed.
	Stream bool
	// Headers are extra HTTP headers sent with the request (a hook's beta
	// flags, say); the provider sends them as given.
	Headers map[string]string
}

// Response is the outcome of a provider call, as a Hooks function sees
// it: the reply (or the error), with the provider's request id and how
// long it took.
type Response struct {
	Message   Message
	Usage     *UsageMetadata
	RequestID string
	// FirstToken is the time to the first streamed token (0 when not
	// streamed).
	FirstToken time.Duration
	Duration   time.Duration
	Err        error
	// firstByte runs Hooks.FirstByte once (see MarkFirstByte).
	firstByte func()
}

// MarkFirstByte is called by a provider when the first byte of the reply
// arrives (the stream's first event, or a whole reply): the first time,
// it runs Hooks.FirstByte.
func (r *Response) MarkFirstByte() {
	if f := r.firstByte; f != nil {
		r.firstByte = nil
		f()
	}
}

// Hooks run around every provider call: BeforeCall may change the
// rendered request and its headers (or refuse it with an error);
// FirstByte runs as the reply begins; AfterCall sees what came back. Prompt caching and per-call records are built on them.
type Hooks struct {
	BeforeCall func(ctx context.Context, req *Request) error
	// FirstByte runs when the reply's first byte arrives, before the rest
	// of it: a provider's cache entry for the request is readable from
	// then on, so requests waiting to share it may go.
	FirstByte func(ctx context.Context, req *Request)
	AfterCall func(ctx context.Context, req *Request, resp *Response)
}

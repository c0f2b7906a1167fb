package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/engine/channels"
	"github.com/superstep-dev/superstep/models"
)

// Node names of the ReAct agent's graph, as upstream's.
const (
	NodeAgent              = "agent"
	NodeTools              = "tools"
	NodePreModelHook       = "pre_model_hook"
	NodePostModelHook      = "post_model_hook"
	NodeStructuredResponse = "generate_structured_response"
)

// NeedMoreSteps is the reply that replaces a model's tool calls when the
// run has too few supersteps left to run them (upstream's text).
const NeedMoreSteps = "Sorry, need more steps to process this request."

// ErrInvalidChatHistory is the error of a model call over a history in
// which an AI message's tool call has no ToolMessage (upstream's
// INVALID_CHAT_HISTORY).
var ErrInvalidChatHistory = errors.New("agents: INVALID_CHAT_HISTORY")

// AgentState is the state of the ReAct agent: upstream's AgentState.
type AgentState struct {
	Messages []models.Message `json:"messages" reduce:"add_messages"`
	// StructuredResponse is the reply of the structured-output call, set
	// when ReactOptions.ResponseFormat is.
	StructuredResponse map[string]any `json:"structured_response,omitempty"`
	// LLMInputMessages, written by the pre-model hook, are what the model
	// sees instead of Messages, without being stored in them. They last
	// one superstep.
	LLMInputMessages []models.Message `json:"llm_input_messages,omitempty"`
}

// Version chooses how the agent runs tool calls.
type Version string

const (
	// V2 sends each tool call to the tools node as its own task (a
	// ToolCallWithContext), upstream's default.
	V2 Version = "v2"
	// V1 runs every tool call of a reply in one tools task.
	V1 Version = "v1"
)

// ReactOptions configure NewReactAgent. The zero value is an agent
// without prompt or hooks, with V2 routing.
type ReactOptions struct {
	// Name is the graph's name and the Name of the agent's AI messages.
	Name string
	// Prompt, when set, is a system message put before the history.
	Prompt string
	// PromptFunc, when set, builds the model's input from the state (and
	// the messages the model would see otherwise) instead of Prompt.
	PromptFunc func(ctx context.Context, state AgentState, messages []models.Message) ([]models.Message, error)
	// PreModelHook runs before every model call, as a node. It may return
	// "messages" (start them with models.RemoveAll() to overwrite the
	// history) and/or "llm_input_messages" (what the model sees this
	// time, not stored).
	PreModelHook func(ctx context.Context, state AgentState) (engine.Output, error)
	// PostModelHook runs after every model call, as a node (V2 routing:
	// pending tool calls are sent after it).
	PostModelHook func(ctx context.Context, state AgentState) (engine.Output, error)
	// ResponseFormat, when set, makes a separate model call after the
	// loop that asks for this schema; the reply, a JSON object, is
	// structured_response.
	ResponseFormat *models.ResponseSchema
	// ResponsePrompt is a system message put before the history for that
	// call (upstream's (prompt, schema) pair).
	ResponsePrompt string
	// Version is V2 (the default) or V1.
	Version Version
	// ToolNode configures the tools node (error handling, result size).
	ToolNode *ToolNodeOptions
	// CallOptions are passed on every model call (tools are bound by the
	// agent).
	CallOptions *models.CallOptions
	// ModelRetry is the retry policy of the model calls (the agent and
	// structured-output nodes): providers leave retries to the engine, so
	// rate limits (429, honouring Retry-After), overloads (529) and 5xx are
	// retried here and show as TaskRetried events. Nil means the graph's
	// Compile.Retry when set, else engine.DefaultRetryPolicy(); a policy
	// with MaxAttempts 1 turns retries off. ModelRetry is not given to the
	// tools node: a tool with side effects must not run again because
	// another failed (Compile.Retry, when set, applies to it).
	ModelRetry *engine.RetryPolicy
	// Compile holds the graph's checkpointer, store and breakpoints; its
	// Name defaults to Name.
	Compile engine.CompileOptions
}

// NewReactAgent builds upstream's create_react_agent as a compiled graph
// over AgentState: the model node "agent" and the ToolNode "tools" in a
// loop until the model stops calling tools. See the package doc.
func NewReactAgent(model models.ChatModel, tools []Tool, opts *ReactOptions) (*engine.Graph[AgentState], error) {
	if model == nil {
		return nil, errors.New("agents: NewReactAgent needs a model")
	}
	var o ReactOptions
	if opts != nil {
		o = *opts
	}
	switch o.Version {
	case "":
		o.Version = V2
	case V1, V2:
	default:
		return nil, fmt.Errorf("agents: unknown version %q (want v1 or v2)", o.Version)
	}
	if o.Compile.Name == "" {
		o.Compile.Name = o.Name
	}
	a := &reactAgent{opts: o, model: model, base: model, returnDirect: map[string]bool{}}
	var specs []models.ToolSpec
	for _, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("%w: a nil tool", ErrInvalidTool)
		}
		specs = append(specs, t.Spec())
		if isReturnDirect(t) {
			a.returnDirect[t.Spec().Name] = true
		}
	}
	if len(specs) > 0 {
		a.model = models.WithTools(model, specs...)
	}

	g := engine.NewStateGraph[AgentState]()
	g.Channel("llm_input_messages", channels.EphemeralValueOf[[]models.Message](false))
	var modelOpts []engine.NodeOption
	switch {
	case o.ModelRetry != nil:
		modelOpts = append(modelOpts, engine.WithRetry(*o.ModelRetry))
	case len(o.Compile.Retry) == 0:
		modelOpts = append(modelOpts, engine.WithRetry(engine.DefaultRetryPolicy()))
	}
	g.AddNode(NodeAgent, a.callModel, modelOpts...)
	entry := NodeAgent
	if o.PreModelHook != nil {
		g.AddNode(NodePreModelHook, o.PreModelHook)
		g.AddEdge(NodePreModelHook, NodeAgent)
		entry = NodePreModelHook
	}
	a.entry = entry
	g.AddEdge(engine.Start, entry)
	after := NodeAgent // the node whose router decides what comes next
	if o.PostModelHook != nil {
		g.AddNode(NodePostModelHook, o.PostModelHook)
		g.AddEdge(NodeAgent, NodePostModelHook)
		after = NodePostModelHook
	}
	if o.ResponseFormat != nil {
		g.AddNode(NodeStructuredResponse, a.structuredResponse, modelOpts...)
		g.AddEdge(NodeStructuredResponse, engine.End)
	}
	if len(tools) == 0 {
		if o.ResponseFormat != nil {
			g.AddEdge(after, NodeStructuredResponse)
		} else {
			g.AddEdge(after, engine.End)
		}
		return g.Compile(o.Compile)
	}
	tn, err := NewToolNode(tools, o.ToolNode)
	if err != nil {
		return nil, err
	}
	engine.AddNodeFunc(g, NodeTools, tn.Run)
	paths := map[string]string{NodeTools: NodeTools, engine.End: engine.End}
	if o.ResponseFormat != nil {
		paths[NodeStructuredResponse] = NodeStructuredResponse
	}
	if after == NodePostModelHook {
		paths[entry] = entry
		g.AddConditionalEdges(NodePostModelHook, a.afterPostHook, paths)
	} else {
		g.AddConditionalEdges(NodeAgent, a.afterAgent, paths)
	}
	if len(a.returnDirect) > 0 {
		g.AddConditionalEdges(NodeTools, a.afterTools, map[string]string{entry: entry, engine.End: engine.End})
	} else {
		g.AddEdge(NodeTools, entry)
	}
	return g.Compile(o.Compile)
}

type reactAgent struct {
	opts         ReactOptions
	model        models.ChatModel // with the tools bound
	base         models.ChatModel // without, for structured output
	entry        string
	returnDirect map[string]bool
}

// callModel is the "agent" node.
func (a *reactAgent) callModel(ctx context.Context, s AgentState) (engine.Output, error) {
	msgs := s.Messages
	if a.opts.PreModelHook != nil && len(s.LLMInputMessages) > 0 {
		msgs = s.LLMInputMessages
	}
	if err := validateHistory(msgs); err != nil {
		return nil, engine.Permanent(err) // no retry mends a history
	}
	input, err := a.prompt(ctx, s, msgs)
	if err != nil {
		return nil, err
	}
	reply, err := models.Call(ctx, a.model, input, a.opts.CallOptions)
	if err != nil {
		return nil, err
	}
	reply.Name = a.opts.Name
	if a.moreStepsNeeded(ctx, reply) {
		return engine.Update{"messages": []models.Message{{Type: models.TypeAI, ID: reply.ID, Name: a.opts.Name, Content: models.Text(NeedMoreSteps)}}}, nil
	}
	return engine.Update{"messages": []models.Message{reply}}, nil
}

func (a *reactAgent) prompt(ctx context.Context, s AgentState, msgs []models.Message) ([]models.Message, error) {
	switch {
	case a.opts.PromptFunc != nil:
		return a.opts.PromptFunc(ctx, s, msgs)
	case a.opts.Prompt != "":
		return append([]models.Message{models.System(a.opts.Prompt)}, msgs...), nil
	}
	return msgs, nil
}

// moreStepsNeeded is upstream's _are_more_steps_needed, all() of no calls
// included.
// Upstream reads its RemainingSteps managed value; the engine gives it to
// the running node (engine.RemainingSteps), so the state holds no key for
// it.
func (a *reactAgent) moreStepsNeeded(ctx context.Context, reply models.Message) bool {
	left := engine.RemainingSteps(ctx)
	allDirect := true
	for _, c := range reply.ToolCalls {
		allDirect = allDirect && a.returnDirect[c.Name]
	}
	return (left < 1 && allDirect) || (left < 2 && len(reply.ToolCalls) > 0)
}

// validateHistory is upstream's _validate_chat_history.
func validateHistory(msgs []models.Message) error {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m.Type == models.TypeTool {
			answered[m.ToolCallID] = true
		}
	}
	var missing []string
	for _, m := range msgs {
		if m.Type != models.TypeAI {
			continue
		}
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, fmt.Sprintf("%s (%s)", c.ID, c.Name))
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if len(missing) > 3 {
		missing = missing[:3]
	}
	return fmt.Errorf("%w: found AI messages with tool calls that have no ToolMessage; the first few: %s. "+
		"Every tool call in the history must have a ToolMessage with its result: most providers require it", ErrInvalidChatHistory, strings.Join(missing, ", "))
}

// afterAgent routes after the model (no post-model hook).
func (a *reactAgent) afterAgent(_ context.Context, s AgentState) (engine.Route, error) {
	last, ok := lastMessage(s.Messages)
	if !ok || last.Type != models.TypeAI || (len(last.ToolCalls) == 0 && !hasInvalidWithID(last)) {
		return a.finish(), nil
	}
	if a.opts.Version == V1 {
		return engine.To(NodeTools), nil
	}
	return engine.SendTo(a.sends(s, last, nil)...), nil
}

// afterPostHook is upstream's post_model_hook_router: only the calls
// still without a ToolMessage are sent.
func (a *reactAgent) afterPostHook(_ context.Context, s AgentState) (engine.Route, error) {
	answered := map[string]bool{}
	for _, m := range s.Messages {
		if m.Type == models.TypeTool {
			answered[m.ToolCallID] = true
		}
	}
	ai, ok := lastAI(s.Messages)
	if ok {
		if sends := a.sends(s, ai, answered); len(sends) > 0 {
			if a.opts.Version == V1 {
				return engine.To(NodeTools), nil
			}
			return engine.SendTo(sends...), nil
		}
	}
	if last, ok := lastMessage(s.Messages); ok && last.Type == models.TypeTool {
		return engine.To(a.entry), nil
	}
	return a.finish(), nil
}

func (a *reactAgent) finish() engine.Route {
	if a.opts.ResponseFormat != nil {
		return engine.To(NodeStructuredResponse)
	}
	return engine.To(engine.End)
}

// sends makes one Send per call of ai not yet answered.
func (a *reactAgent) sends(s AgentState, ai models.Message, answered map[string]bool) []engine.Send {
	state := s
	state.LLMInputMessages = nil
	var sends []engine.Send
	for _, c := range ai.ToolCalls {
		if !answered[c.ID] {
			sends = append(sends, engine.Send{Node: NodeTools, Arg: ToolCallWithContext(c, state)})
		}
	}
	for i := range ai.InvalidToolCalls {
		c := ai.InvalidToolCalls[i]
		if c.ID != "" && !answered[c.ID] {
			sends = append(sends, engine.Send{Node: NodeTools, Arg: ToolInput{Type: ToolCallWithContextType, InvalidToolCall: &c, State: state}})
		}
	}
	return sends
}

// afterTools is upstream's route_tool_responses: END after a
// return-direct tool.
func (a *reactAgent) afterTools(_ context.Context, s AgentState) (engine.Route, error) {
	i := len(s.Messages) - 1
	for ; i >= 0 && s.Messages[i].Type == models.TypeTool; i-- {
		if a.returnDirect[s.Messages[i].Name] {
			return engine.To(engine.End), nil
		}
	}
	if i >= 0 && s.Messages[i].Type == models.TypeAI {
		for _, c := range s.Messages[i].ToolCalls {
			if a.returnDirect[c.Name] {
				return engine.To(engine.End), nil
			}
		}
	}
	return engine.To(a.entry), nil
}

// structuredResponse is the "generate_structured_response" node: one
// more model call, without tools, asking for the schema.
func (a *reactAgent) structuredResponse(ctx context.Context, s AgentState) (engine.Output, error) {
	msgs := s.Messages
	if a.opts.ResponsePrompt != "" {
		msgs = append([]models.Message{models.System(a.opts.ResponsePrompt)}, msgs...)
	}
	var opts models.CallOptions
	if a.opts.CallOptions != nil {
		opts = *a.opts.CallOptions
	}
	opts.Tools = nil
	opts.ToolChoice = ""
	opts.Response = a.opts.ResponseFormat
	reply, err := models.Call(ctx, a.base, msgs, &opts)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(reply.Text())), &out); err != nil || out == nil {
		// As upstream's output parser error, not retried.
		return nil, engine.Permanent(fmt.Errorf("agents: the structured response of %q is not a JSON object (%q): %v", a.opts.ResponseFormat.Name, abbreviate(reply.Text()), err))
	}
	return engine.Update{"structured_response": out}, nil
}

func lastMessage(msgs []models.Message) (models.Message, bool) {
	if len(msgs) == 0 {
		return models.Message{}, false
	}
	return msgs[len(msgs)-1], true
}

func abbreviate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

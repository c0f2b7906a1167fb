package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

// DefaultMaxResultBytes is the size above which a tool's result is cut
// (ToolNodeOptions.MaxResultBytes).
const DefaultMaxResultBytes = 64 << 10

// ToolCallWithContextType is the "__type" of a ToolInput that carries one
// tool call (upstream's ToolCallWithContext).
const ToolCallWithContextType = "tool_call_with_context"

// ToolInput is the input of a ToolNode. Reached by an edge, the node
// reads Messages from the state's "messages" key and runs the tool calls
// of the last AI message. Reached by a Send, the payload is a
// ToolCallWithContext: one call and the state it was made in (upstream's
// {"__type":"tool_call_with_context","tool_call":…,"state":…}).
type ToolInput struct {
	Messages []models.Message `json:"messages,omitempty"`
	Type     string           `json:"__type,omitempty"`
	ToolCall *models.ToolCall `json:"tool_call,omitempty"`
	// InvalidToolCall, instead of ToolCall, is a call whose arguments were
	// not a JSON object: the node answers it with an error.
	InvalidToolCall *models.InvalidToolCall `json:"invalid_tool_call,omitempty"`
	// State is the graph state when the call was sent. Tools see it with
	// RuntimeFrom; it is decoded JSON after a resume.
	State any `json:"state,omitempty"`
}

// ToolCallWithContext is the Send payload that runs one tool call in a
// ToolNode.
func ToolCallWithContext(call models.ToolCall, state any) ToolInput {
	return ToolInput{Type: ToolCallWithContextType, ToolCall: &call, State: state}
}

// ErrorHandler decides what a failed tool call tells the model: content
// and true to answer with an error ToolMessage, false to fail the task
// with the error.
type ErrorHandler func(err error) (content string, handled bool)

// HandleAllErrors answers every tool error with upstream's text for
// handle_tool_errors=True: "Error: <err>\n Please fix your mistakes.".
func HandleAllErrors(err error) (string, bool) {
	return fmt.Sprintf("Error: %v\n Please fix your mistakes.", err), true
}

// HandleErrorsWith answers every tool error with text.
func HandleErrorsWith(text string) ErrorHandler {
	return func(error) (string, bool) { return text, true }
}

// RaiseErrors answers no error: argument errors fail the task too
// (upstream's handle_tool_errors=False).
func RaiseErrors(error) (string, bool) { return "", false }

// defaultHandler is upstream's default: argument errors are answered,
// execution errors fail the task.
func defaultHandler(err error) (string, bool) {
	var ae *ArgumentError
	if errors.As(err, &ae) {
		return ae.Error(), true
	}
	return "", false
}

// ToolNodeOptions configure a ToolNode.
type ToolNodeOptions struct {
	// HandleErrors decides which tool errors go back to the model as error
	// ToolMessages. Nil is upstream's default: argument errors only;
	// execution errors fail the task. Interrupts always propagate.
	HandleErrors ErrorHandler
	// MaxResultBytes cuts a result's text above this size, with a marker
	// saying how much was cut (0: DefaultMaxResultBytes; <0: no limit).
	MaxResultBytes int
}

// ToolNode runs tool calls as a graph node. Add it with
//
//	engine.AddNodeFunc(g, "tools", toolNode.Run)
//
// over any state with a "messages" key of []models.Message (plus, when
// reached by Sends, ToolCallWithContext payloads).
type ToolNode struct {
	tools  map[string]Tool
	names  []string
	handle ErrorHandler
	limit  int
}

// NewToolNode returns a ToolNode over tools; names must be unique.
func NewToolNode(tools []Tool, opts *ToolNodeOptions) (*ToolNode, error) {
	n := &ToolNode{tools: map[string]Tool{}, handle: defaultHandler, limit: DefaultMaxResultBytes}
	for _, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("%w: a nil tool", ErrInvalidTool)
		}
		name := t.Spec().Name
		if _, dup := n.tools[name]; dup {
			return nil, fmt.Errorf("%w: two tools are named %q", ErrInvalidTool, name)
		}
		n.tools[name] = t
		n.names = append(n.names, name)
	}
	if opts != nil {
		if opts.HandleErrors != nil {
			n.handle = opts.HandleErrors
		}
		if opts.MaxResultBytes != 0 {
			n.limit = opts.MaxResultBytes
		}
	}
	return n, nil
}

// Runtime is what a tool can learn about the call it is running in.
type Runtime struct {
	ToolCall models.ToolCall
	// State is the graph state of a ToolCallWithContext (nil when the
	// node read messages from the state).
	State any
}

type runtimeKey struct{}

// RuntimeFrom returns the runtime of the tool call running in ctx.
func RuntimeFrom(ctx context.Context) (Runtime, bool) {
	r, ok := ctx.Value(runtimeKey{}).(Runtime)
	return r, ok
}

// call is one tool call to answer: well formed, or invalid.
type call struct {
	tc      models.ToolCall
	invalid *models.InvalidToolCall
}

// Run is the node function: it runs the tool calls in parallel and
// returns their ToolMessages in call order, as engine.Update{"messages":
// …}, or as one engine.Command when a tool returned a Command (updates
// in call order, gotos concatenated). An execution error a handler does
// not answer, and any interrupt, fail the task; nothing is written then.
func (n *ToolNode) Run(ctx context.Context, in ToolInput) (engine.Output, error) {
	var calls []call
	var state any
	switch {
	case in.ToolCall != nil:
		calls = []call{{tc: *in.ToolCall}}
		state = in.State
	case in.InvalidToolCall != nil:
		calls = []call{{invalid: in.InvalidToolCall}}
		state = in.State
	default:
		ai, ok := lastAI(in.Messages)
		if !ok {
			return nil, errors.New("agents: ToolNode found no AI message in the input messages")
		}
		for _, tc := range ai.ToolCalls {
			calls = append(calls, call{tc: tc})
		}
		for i := range ai.InvalidToolCalls {
			if ai.InvalidToolCalls[i].ID != "" {
				calls = append(calls, call{invalid: &ai.InvalidToolCalls[i]})
			}
		}
	}
	results := make([]any, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = n.runOne(ctx, c, state)
		}()
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && isInterrupt(err) {
			return nil, err
		}
		if err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	return combine(results)
}

// runOne runs one call and returns its ToolMessage or Command.
func (n *ToolNode) runOne(ctx context.Context, c call, state any) (any, error) {
	if c.invalid != nil {
		return models.Message{Type: models.TypeTool, Name: c.invalid.Name, ToolCallID: c.invalid.ID, Status: models.StatusError,
			Content: models.Text(fmt.Sprintf("Error: the arguments of tool %q are not a JSON object: %s\n Please fix your mistakes.", c.invalid.Name, c.invalid.Error))}, nil
	}
	tc := c.tc
	t, ok := n.tools[tc.Name]
	if !ok {
		return errorMessage(tc, fmt.Sprintf("Error: %s is not a valid tool, try one of [%s].", tc.Name, strings.Join(n.names, ", "))), nil
	}
	out, err := invokeSafely(context.WithValue(ctx, runtimeKey{}, Runtime{ToolCall: tc, State: state}), t, tc.Args)
	if err != nil {
		if isInterrupt(err) {
			return nil, err
		}
		content, handled := n.handle(err)
		if !handled {
			return nil, fmt.Errorf("tool %q (call %s): %w", tc.Name, tc.ID, err)
		}
		return errorMessage(tc, content), nil
	}
	return n.toResult(tc, out)
}

// invokeSafely turns a tool's panic into an error, so one bad tool does
// not take the others' results down with the process.
func invokeSafely(ctx context.Context, t Tool, args map[string]any) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool panicked: %v", r)
		}
	}()
	return t.Invoke(ctx, args)
}

func errorMessage(tc models.ToolCall, content string) models.Message {
	return models.Message{Type: models.TypeTool, Name: tc.Name, ToolCallID: tc.ID, Status: models.StatusError, Content: models.Text(content)}
}

// toResult turns what a tool returned into its ToolMessage, or checks a
// Command carries it.
func (n *ToolNode) toResult(tc models.ToolCall, out any) (any, error) {
	switch v := out.(type) {
	case engine.Command:
		return v, checkCommand(tc, v)
	case *engine.Command:
		if v == nil {
			break
		}
		return *v, checkCommand(tc, *v)
	case models.Message:
		if v.Type != models.TypeTool {
			return nil, fmt.Errorf("tool %q returned a %s message; a tool returns a tool message (or content)", tc.Name, v.Type)
		}
		if v.ToolCallID == "" {
			v.ToolCallID = tc.ID
		}
		if v.Name == "" {
			v.Name = tc.Name
		}
		if v.Status == "" {
			v.Status = models.StatusSuccess
		}
		v.Content = n.truncate(v.Content)
		return v, nil
	}
	var content models.Content
	switch v := out.(type) {
	case string:
		content = models.Text(v)
	case models.Content:
		content = v
	default:
		// As upstream's json.dumps(ensure_ascii=False): <, > and & as
		// they are, not \u003c.
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			content = models.Text(fmt.Sprint(v))
		} else {
			content = models.Text(strings.TrimSuffix(b.String(), "\n"))
		}
	}
	return models.Message{Type: models.TypeTool, Name: tc.Name, ToolCallID: tc.ID, Status: models.StatusSuccess, Content: n.truncate(content)}, nil
}

// truncate cuts content above the limit with a marker the model can
// read: a string on a rune boundary; a block list by its text blocks, in
// order — the block that crosses the limit is cut, later text blocks are
// dropped, other blocks (images, documents) are kept, and a text block
// with the marker is added.
func (n *ToolNode) truncate(c models.Content) models.Content {
	if n.limit < 0 {
		return c
	}
	if !c.IsList() {
		if len(c.Text) <= n.limit {
			return c
		}
		cut := runeCut(c.Text, n.limit)
		return models.Text(c.Text[:cut] + truncatedMarker(len(c.Text), cut))
	}
	total := 0
	for _, b := range c.Blocks {
		if t, ok := b["text"].(string); ok && b.Type() == "text" {
			total += len(t)
		}
	}
	if total <= n.limit {
		return c
	}
	out := make([]models.Block, 0, len(c.Blocks)+1)
	kept := 0
	for _, b := range c.Blocks {
		t, ok := b["text"].(string)
		if !ok || b.Type() != "text" {
			out = append(out, b)
			continue
		}
		if kept >= n.limit {
			continue
		}
		if kept+len(t) > n.limit {
			t = t[:runeCut(t, n.limit-kept)]
		}
		kept += len(t)
		out = append(out, models.TextBlock(t))
	}
	return models.Blocks(append(out, models.TextBlock(truncatedMarker(total, kept)))...)
}

// runeCut is the largest cut at or below limit on a rune boundary of s.
func runeCut(s string, limit int) int {
	cut := limit
	for cut > 0 && cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

func truncatedMarker(total, shown int) string {
	return fmt.Sprintf("\n[truncated: the result was %d bytes; only the first %d are shown]", total, shown)
}

// checkCommand makes sure a tool's Command answers its call (§4.5): its
// update must hold this call's ToolMessage, unless it clears the history.
func checkCommand(tc models.ToolCall, cmd engine.Command) error {
	for _, kv := range updateKVs(cmd.Update) {
		if kv.Key != "messages" {
			continue
		}
		msgs, err := models.ToMessages(kv.Value)
		if err != nil {
			return fmt.Errorf("tool %q returned a Command whose messages do not read: %w", tc.Name, err)
		}
		for _, m := range msgs {
			if (m.Type == models.TypeTool && m.ToolCallID == tc.ID) || (m.Type == models.TypeRemove && m.ID == models.RemoveAllID) {
				return nil
			}
		}
	}
	return fmt.Errorf("tool %q returned a Command without a ToolMessage for its call %q in update[\"messages\"]; every tool call needs one", tc.Name, tc.ID)
}

// updateKVs lists the writes of an update in order (an Update's keys
// sorted, for a deterministic order).
func updateKVs(o engine.Output) []engine.KV {
	switch u := o.(type) {
	case engine.Update:
		keys := make([]string, 0, len(u))
		for k := range u {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		kvs := make([]engine.KV, len(keys))
		for i, k := range keys {
			kvs[i] = engine.KV{Key: k, Value: u[k]}
		}
		return kvs
	case engine.Updates:
		return u
	case engine.KV:
		return []engine.KV{u}
	}
	return nil
}

// combine returns the results as one output: an Update of the messages,
// or a Command when any result is one.
func combine(results []any) (engine.Output, error) {
	var msgs []models.Message
	hasCommand := false
	for _, r := range results {
		switch v := r.(type) {
		case models.Message:
			msgs = append(msgs, v)
		case engine.Command:
			hasCommand = true
		}
	}
	if !hasCommand {
		return engine.Update{"messages": msgs}, nil
	}
	var out engine.Command
	var ups engine.Updates
	for _, r := range results {
		switch v := r.(type) {
		case models.Message:
			ups = append(ups, engine.KV{Key: "messages", Value: v})
		case engine.Command:
			if v.Resume != nil {
				return nil, errors.New("agents: a tool's Command may not set Resume")
			}
			if v.Update != nil && updateKVs(v.Update) == nil {
				return nil, fmt.Errorf("agents: a tool's Command update is a %T; use engine.Update, engine.Updates or engine.Set", v.Update)
			}
			ups = append(ups, updateKVs(v.Update)...)
			out.Goto = append(out.Goto, v.Goto...)
		}
	}
	out.Update = ups
	return out, nil
}

func lastAI(msgs []models.Message) (models.Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Type == models.TypeAI || msgs[i].Type == models.TypeAIChunk {
			return msgs[i], true
		}
	}
	return models.Message{}, false
}

// isInterrupt tells an interrupt (a tool called engine.Interrupt, or ran
// a graph that stopped) from a tool's failure: an interrupt is never
// answered as a tool error.
func isInterrupt(err error) bool {
	return engine.IsInterrupt(err) || errors.Is(err, engine.ErrInterrupted)
}

// ToolsCondition is upstream's tools_condition: "tools" when the last
// message is an AI message with tool calls, engine.End otherwise. state is
// a []models.Message, a map or struct with a "messages" key, or a
// ToolInput. No messages is an error. (AI messages whose only calls are
// invalid also go to "tools", to be answered; see the package doc.)
func ToolsCondition(state any) (string, error) {
	msgs, err := messagesOf(state)
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		return "", fmt.Errorf("agents: ToolsCondition: no messages found in input state: %T", state)
	}
	last := msgs[len(msgs)-1]
	if (last.Type == models.TypeAI || last.Type == models.TypeAIChunk) && (len(last.ToolCalls) > 0 || hasInvalidWithID(last)) {
		return "tools", nil
	}
	return engine.End, nil
}

// ToolsRoute is ToolsCondition as a router for
// StateGraph.AddConditionalEdges.
func ToolsRoute[S any](_ context.Context, state S) (engine.Route, error) {
	to, err := ToolsCondition(state)
	if err != nil {
		return engine.Route{}, err
	}
	return engine.To(to), nil
}

func hasInvalidWithID(m models.Message) bool {
	for _, c := range m.InvalidToolCalls {
		if c.ID != "" {
			return true
		}
	}
	return false
}

// Package agents holds LangGraph's prebuilt agent pieces in Go: tools
// made from Go functions, ToolNode, ToolsCondition and the ReAct agent.
// Everything here is built from the public engine and models APIs, as a
// user could have written it.
//
// # Tools
//
// NewTool makes a Tool of a function taking a typed argument struct. The
// JSON Schema the model sees is derived from the struct with
// github.com/invopop/jsonschema (json tags name properties, a field
// without omitempty is required, jsonschema tags add descriptions and
// enums). Before the function runs, the model's arguments are decoded
// strictly: unknown properties, missing required ones, wrong types and
// values outside an enum are an *ArgumentError that lists each problem
// in upstream's "Error invoking tool …" text, which goes back to the
// model. A tool returns a string, any JSON-able value (sent as its JSON),
// a models.Message of type tool, or an engine.Command whose update
// carries this call's ToolMessage. ReturnDirect marks a tool that ends
// the agent's run.
//
// # ToolNode
//
// ToolNode.Run is a node function (engine.AddNodeFunc(g, "tools",
// tn.Run)) over any state with a "messages" key: it runs the tool calls
// of the last AI message in parallel and returns their ToolMessages in
// call order. Reached by a Send with a ToolCallWithContext payload it
// runs that one call. Errors follow upstream: an unknown tool is an
// error ToolMessage "Error: X is not a valid tool, try one of [...]";
// argument errors are error ToolMessages; execution errors fail the task
// unless ToolNodeOptions.HandleErrors answers them (HandleAllErrors,
// HandleErrorsWith, or a function); interrupts always propagate. Results
// above MaxResultBytes are cut with a marker: a string on a character
// boundary, a block list by its text blocks (other blocks are kept); a
// tool's Command is not cut — the tool built its message itself.
// Commands are merged into one
// Command: updates in call order, gotos concatenated. Tools read their
// call (and a Send's state) with RuntimeFrom.
//
// ToolsCondition (and ToolsRoute, for AddConditionalEdges) is upstream's
// tools_condition.
//
// # The ReAct agent
//
// NewReactAgent compiles upstream's create_react_agent over AgentState:
// "agent" calls the model through models.Call (so replies stream to the
// "messages" mode), and while it asks for tools, "tools" runs them — with
// V2 (the default) one Send per call, with V1 one task for all. Options
// add a system prompt or a prompt function, a pre-model hook (which may
// overwrite the history, starting with models.RemoveAll(), and/or give
// llm_input_messages for this call only), a post-model hook (after which
// only pending calls are sent), a structured-output call after the loop
// (structured_response), return-direct tools, and the agent's name on
// its AI messages. A history with an unanswered tool call is
// ErrInvalidChatHistory. When fewer than two supersteps remain and the
// model still calls tools, its reply is replaced by NeedMoreSteps.
//
// # Where we differ
//
//   - remaining_steps is not a state key: the agent node reads
//     engine.RemainingSteps, the engine's form of upstream's managed
//     value (never saved, computed from the run's recursion limit).
//   - An AI message's invalid tool calls (arguments that were not a JSON
//     object) that have an id are answered with error ToolMessages, so
//     the model can correct them and providers that need an answer to
//     every call get one; upstream ignores them.
//   - llm_input_messages lasts one superstep (an ephemeral channel):
//     upstream keeps the last value in state.
//   - A ToolNode reads the "messages" key only (no messages_key), and
//     InjectedState/InjectedStore are replaced by RuntimeFrom and
//     engine.StoreFrom.
//   - Several tools of one V1 task that each call engine.Interrupt get
//     their resume answers in the order they called it, which parallel
//     calls do not fix; V2 runs each call as its own task.
//   - An interrupt is told from a tool's error by the engine's error text,
//     as the engine exports no predicate for it.
package agents

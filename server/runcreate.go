package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
)

// runCreate is the body of every run-creating route (RunCreateStateful
// and RunCreateStateless of the Agent Server API). Fields the SDK sends
// that a Go graph has no use for (feedback_keys, checkpoint_during) are
// accepted and ignored, as upstream ignores unknown ones.
type runCreate struct {
	AssistantID       string          `json:"assistant_id"`
	Input             json.RawMessage `json:"input"`
	Command           json.RawMessage `json:"command"`
	Config            *runConfig      `json:"config"`
	Context           map[string]any  `json:"context"`
	Metadata          map[string]any  `json:"metadata"`
	StreamMode        json.RawMessage `json:"stream_mode"`
	StreamSubgraphs   bool            `json:"stream_subgraphs"`
	StreamResumable   bool            `json:"stream_resumable"`
	InterruptBefore   json.RawMessage `json:"interrupt_before"`
	InterruptAfter    json.RawMessage `json:"interrupt_after"`
	Checkpoint        *checkpointRef  `json:"checkpoint"`
	CheckpointID      string          `json:"checkpoint_id"`
	MultitaskStrategy string          `json:"multitask_strategy"`
	OnDisconnect      string          `json:"on_disconnect"`
	OnCompletion      string          `json:"on_completion"`
	IfNotExists       string          `json:"if_not_exists"`
	AfterSeconds      *float64        `json:"after_seconds"`
	Webhook           string          `json:"webhook"`
	Durability        string          `json:"durability"`
}

// runConfig is a run's config: the recursion limit, and configurable
// keys, of which the checkpoint selects a fork.
type runConfig struct {
	RecursionLimit *int           `json:"recursion_limit"`
	Tags           []string       `json:"tags"`
	Configurable   map[string]any `json:"configurable"`
}

// checkpointRef names a checkpoint of the thread (the root namespace).
type checkpointRef struct {
	ThreadID      string         `json:"thread_id"`
	CheckpointID  string         `json:"checkpoint_id"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

// The multitask strategies: what a new run does when its thread has an
// active run.
const (
	strategyReject    = "reject"
	strategyInterrupt = "interrupt"
	strategyRollback  = "rollback"
	strategyEnqueue   = "enqueue"
)

// runPlan is a validated runCreate: what to run and how to answer.
type runPlan struct {
	body         runCreate
	kwargs       map[string]any
	input        any
	checkpointID string
	options      runs.StartOptions
	modes        []string
	strategy     string
	cancelOnDrop bool
	createThread bool
	// stateless runs deliver their webhook before their thread is
	// deleted (finishStateless), not on their own.
	stateless bool
	// streaming: the route streams the run's parts, so they are kept
	// past its end (a quick run may end before the stream reads them).
	streaming bool
}

// streamModes are the stream modes a run can be asked for, with the
// engine's mode each maps to. "messages-tuple" is upstream's
// [message, metadata] pairs, the engine's "messages".
var streamModes = map[string]engine.StreamMode{
	"values":         engine.StreamValues,
	"updates":        engine.StreamUpdates,
	"debug":          engine.StreamDebug,
	"tasks":          engine.StreamTasks,
	"checkpoints":    engine.StreamCheckpoints,
	"custom":         engine.StreamCustom,
	"messages-tuple": engine.StreamMessages,
}

// plan validates a run-create body; streaming says whether the route
// streams (on_disconnect then defaults to cancel).
func plan(raw map[string]any, body runCreate, streaming bool) (*runPlan, error) {
	p := &runPlan{body: body, kwargs: raw, strategy: strategyEnqueue, streaming: streaming}
	in, hasInput, err := optionalJSON(body.Input)
	if err != nil {
		return nil, invalid("input", "%v", err)
	}
	cmd, hasCommand, err := optionalJSON(body.Command)
	if err != nil {
		return nil, invalid("command", "%v", err)
	}
	switch {
	case hasInput && hasCommand:
		return nil, invalid("input", "give input or command, not both")
	case hasCommand:
		c, err := parseCommand(cmd)
		if err != nil {
			return nil, err
		}
		p.input = c
	case hasInput:
		m, ok := in.(map[string]any)
		if !ok {
			return nil, invalid("input", "want an object or null, got %s", kindOf(in))
		}
		p.input = m
	}
	if body.Config != nil {
		if rl := body.Config.RecursionLimit; rl != nil {
			if *rl < 1 || *rl > runs.MaxRecursionLimit {
				return nil, invalid("config.recursion_limit", "%d: use 1 to %d", *rl, runs.MaxRecursionLimit)
			}
			p.options.RecursionLimit = *rl
		}
		if id, ok := body.Config.Configurable["checkpoint_id"].(string); ok {
			p.checkpointID = id
		}
		if ns, ok := body.Config.Configurable["checkpoint_ns"].(string); ok && ns != "" {
			return nil, invalid("config.configurable.checkpoint_ns", "a run starts from a checkpoint of the thread's graph (namespace \"\"), not %q", ns)
		}
	}
	if body.Checkpoint != nil {
		if body.Checkpoint.CheckpointNS != "" {
			return nil, invalid("checkpoint.checkpoint_ns", "a run starts from a checkpoint of the thread's graph (namespace \"\"), not %q", body.Checkpoint.CheckpointNS)
		}
		if body.Checkpoint.CheckpointID != "" {
			p.checkpointID = body.Checkpoint.CheckpointID
		}
	}
	if body.CheckpointID != "" {
		p.checkpointID = body.CheckpointID
	}
	if p.options.InterruptBefore, err = nodeList("interrupt_before", body.InterruptBefore); err != nil {
		return nil, err
	}
	if p.options.InterruptAfter, err = nodeList("interrupt_after", body.InterruptAfter); err != nil {
		return nil, err
	}
	if p.modes, err = modeList(body.StreamMode); err != nil {
		return nil, err
	}
	switch s := body.MultitaskStrategy; s {
	case "":
	case strategyReject, strategyInterrupt, strategyRollback, strategyEnqueue:
		p.strategy = s
	default:
		return nil, invalid("multitask_strategy", "%q: use reject, interrupt, rollback or enqueue", s)
	}
	switch body.OnDisconnect {
	case "":
		p.cancelOnDrop = streaming
	case "cancel":
		p.cancelOnDrop = true
	case "continue":
	default:
		return nil, invalid("on_disconnect", "%q: use cancel or continue", body.OnDisconnect)
	}
	switch body.IfNotExists {
	case "", "reject":
	case "create":
		p.createThread = true
	default:
		return nil, invalid("if_not_exists", "%q: use create or reject", body.IfNotExists)
	}
	switch body.OnCompletion {
	case "", "delete", "keep":
	default:
		return nil, invalid("on_completion", "%q: use delete or keep", body.OnCompletion)
	}
	switch body.Durability {
	// Every run saves each step before the next starts (sync): the
	// Studio's live view and crash safety rely on it; async and exit
	// are accepted and get the stronger guarantee.
	case "", "sync", "async", "exit":
	default:
		return nil, invalid("durability", "%q: use sync, async or exit", body.Durability)
	}
	if body.AfterSeconds != nil && (*body.AfterSeconds < 0 || *body.AfterSeconds > 7*24*3600) {
		return nil, invalid("after_seconds", "%v: use 0 to 604800 (a week)", *body.AfterSeconds)
	}
	return p, nil
}

// optionalJSON decodes a raw field: absent and null are both "not given".
func optionalJSON(raw json.RawMessage) (any, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// parseCommand reads a command: resume (any value, or a map from
// interrupt id to answer), update (an object, or [[key, value], ...]),
// goto (a node, a Send {node, input}, or a list of them).
func parseCommand(v any) (engine.Command, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return engine.Command{}, invalid("command", "want an object with resume, update or goto, got %s", kindOf(v))
	}
	var c engine.Command
	for k := range m {
		if k != "resume" && k != "update" && k != "goto" {
			return c, invalid("command."+k, "unknown; a command has resume, update and goto")
		}
	}
	c.Resume = m["resume"]
	switch u := m["update"].(type) {
	case nil:
	case map[string]any:
		c.Update = engine.Update(u)
	case []any:
		var ups engine.Updates
		for i, e := range u {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return c, invalid(fmt.Sprintf("command.update[%d]", i), "want a [key, value] pair")
			}
			key, ok := pair[0].(string)
			if !ok {
				return c, invalid(fmt.Sprintf("command.update[%d]", i), "the key must be a string")
			}
			ups = append(ups, engine.Set(key, pair[1]))
		}
		c.Update = ups
	default:
		return c, invalid("command.update", "want an object or a list of [key, value] pairs, got %s", kindOf(u))
	}
	gotos := m["goto"]
	if g, ok := gotos.([]any); ok {
		for i, e := range g {
			x, err := gotoTarget(fmt.Sprintf("command.goto[%d]", i), e)
			if err != nil {
				return c, err
			}
			c.Goto = append(c.Goto, x)
		}
	} else if gotos != nil {
		x, err := gotoTarget("command.goto", gotos)
		if err != nil {
			return c, err
		}
		c.Goto = []any{x}
	}
	if c.Resume == nil && c.Update == nil && len(c.Goto) == 0 {
		return c, invalid("command", "empty: give resume, update or goto")
	}
	return c, nil
}

func gotoTarget(field string, v any) (any, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case map[string]any:
		node, _ := t["node"].(string)
		if node == "" {
			return nil, invalid(field+".node", "a Send names its node")
		}
		return engine.Send{Node: node, Arg: t["input"]}, nil
	}
	return nil, invalid(field, "want a node name or {node, input}, got %s", kindOf(v))
}

// nodeList reads interrupt_before/after: "*" or a list of node names.
func nodeList(field string, raw json.RawMessage) ([]string, error) {
	v, ok, err := optionalJSON(raw)
	if err != nil || !ok {
		return nil, err
	}
	switch t := v.(type) {
	case string:
		if t != "*" {
			return nil, invalid(field, "%q: use \"*\" or a list of node names", t)
		}
		return []string{"*"}, nil
	case []any:
		out := make([]string, 0, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, invalid(fmt.Sprintf("%s[%d]", field, i), "want a node name")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, invalid(field, "want \"*\" or a list of node names, got %s", kindOf(v))
}

// modeList reads stream_mode: one mode or a list (default values).
func modeList(raw json.RawMessage) ([]string, error) {
	v, ok, err := optionalJSON(raw)
	if err != nil {
		return nil, invalid("stream_mode", "%v", err)
	}
	var out []string
	switch t := v.(type) {
	case nil:
	case string:
		out = []string{t}
	case []any:
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, invalid(fmt.Sprintf("stream_mode[%d]", i), "want a mode name")
			}
			out = append(out, s)
		}
	default:
		return nil, invalid("stream_mode", "want a mode or a list of modes, got %s", kindOf(v))
	}
	if !ok || len(out) == 0 {
		return []string{"values"}, nil
	}
	for _, m := range out {
		if _, ok := streamModes[m]; !ok {
			known := make([]string, 0, len(streamModes))
			for k := range streamModes {
				known = append(known, k)
			}
			slices.Sort(known)
			return nil, invalid("stream_mode", "%q is not supported; use %s", m, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// engineModes maps API mode names to the engine's.
func engineModes(modes []string) []engine.StreamMode {
	out := make([]engine.StreamMode, 0, len(modes))
	for _, m := range modes {
		if em := streamModes[m]; !slices.Contains(out, em) {
			out = append(out, em)
		}
	}
	return out
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

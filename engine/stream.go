package engine

import (
	"context"
	"errors"
	"iter"
	"reflect"
	"slices"
	"strings"
	"time"
)

// StreamMode selects a projection of a run's events, with upstream
// LangGraph's payload shapes.
type StreamMode string

// The stream modes.
const (
	// StreamValues: the full state after each superstep that changed it.
	StreamValues StreamMode = "values"
	// StreamUpdates: {node: update} as each task finishes; cached tasks add
	// "__metadata__": {"cached": true}; a breakpoint gives
	// {"__interrupt__": []}.
	StreamUpdates StreamMode = "updates"
	// StreamTasks: task start and task result payloads.
	StreamTasks StreamMode = "tasks"
	// StreamCheckpoints: each checkpoint with its next tasks.
	StreamCheckpoints StreamMode = "checkpoints"
	// StreamDebug: checkpoints and tasks wrapped with step, timestamp and
	// type.
	StreamDebug StreamMode = "debug"
	// StreamCustom: payloads nodes emitted with Emit.
	StreamCustom StreamMode = "custom"
	// StreamMessages: [message, metadata] pairs: the chunks chat models
	// stream from inside nodes (EmitMessageChunk), then each message a
	// node returns that was neither in its input nor streamed as chunks,
	// as upstream's "messages" mode.
	StreamMessages StreamMode = "messages"
)

// StreamPart is one streamed item.
type StreamPart struct {
	Mode StreamMode
	// Namespace is the path of subgraph namespaces ("node:<task id>"),
	// empty at the root.
	Namespace []string
	Data      any
}

// Stream runs the graph and yields the parts of the requested modes
// (default StreamValues), then a final error if the run failed (an
// *Interrupted error when it stopped at a breakpoint). Breaking out of the
// loop cancels the run.
func (g *Pregel) Stream(ctx context.Context, input any, opts *RunOptions, modes ...StreamMode) iter.Seq2[StreamPart, error] {
	if len(modes) == 0 {
		modes = []StreamMode{StreamValues}
	}
	return func(yield func(StreamPart, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		parts := make(chan StreamPart, 64)
		done := make(chan error, 1)
		o := RunOptions{}
		if opts != nil {
			o = *opts
		}
		user := o.Listener
		// Without a checkpointer the loop's checkpoints live in memory
		// only: upstream streams no "checkpoints" parts and no "checkpoint"
		// debug events for them, and neither do we (a Listener still gets
		// CheckpointSaved).
		project := g.StreamListener(modes, o.Subgraphs, func(part StreamPart) {
			select {
			case parts <- part:
			case <-ctx.Done():
			}
		})
		o.Listener = func(ev Event) {
			if user != nil {
				user(ev)
			}
			project(ev)
		}
		go func() {
			_, err := g.Invoke(ctx, input, &o)
			close(parts)
			done <- err
		}()
		for part := range parts {
			if !yield(part, nil) {
				cancel()
				for range parts {
				}
				<-done
				return
			}
		}
		if err := <-done; err != nil {
			yield(StreamPart{}, err)
		}
	}
}

// StreamListener returns a RunOptions.Listener that projects a run's
// events onto the stream modes (default StreamValues) as Stream does, and
// hands each part to emit, in order, on the run's goroutines: a caller
// that runs the graph itself (a run manager fanning parts out to API
// clients) gets Stream's parts without Stream's channel. subgraphs is
// RunOptions.Subgraphs. emit must not block for long: the run waits for
// it, and it must not keep Data beyond the call unless it copies it
// (encoding it as JSON is a copy).
func (g *Pregel) StreamListener(modes []StreamMode, subgraphs bool, emit func(StreamPart)) func(Event) {
	if len(modes) == 0 {
		modes = []StreamMode{StreamValues}
	}
	p := &projector{modes: modes, emit: emit, noCheckpoints: g.cfg.Checkpointer == nil, subgraphs: subgraphs}
	if g.mapOutput == nil {
		// A low-level graph streams its stream channels only (every
		// channel by default), as upstream: raw values when it names
		// one stream channel (upstream's stream_channels given as one
		// name), maps keyed by channel otherwise.
		p.outputs = map[string]bool{}
		for _, c := range g.streamChannels() {
			p.outputs[c] = true
		}
		if len(g.cfg.StreamChannels) == 1 {
			p.raw = g.cfg.StreamChannels[0]
		}
	}
	return p.project
}

type projector struct {
	modes []StreamMode
	emit  func(StreamPart)
	// noCheckpoints drops checkpoint parts: the graph has no checkpointer.
	noCheckpoints bool
	// subgraphs streams the parts of subgraphs too (RunOptions.Subgraphs).
	subgraphs bool
	// For "messages": the run's thread and id, and the message ids not to
	// stream again (those in a task's input, those streamed), for the
	// whole run as upstream's handler keeps them.
	threadID, runID string
	seenMsgs        map[string]bool
	// outputs, for a low-level graph, are the channels its "updates"
	// show; raw names its one output channel when values and updates are
	// that channel's value, not a map.
	outputs map[string]bool
	raw     string
}

// valuesPart is a "values" payload: the raw output value of a graph with
// one output channel, else the map.
func (p *projector) valuesPart(ns string, values map[string]any) (any, bool) {
	if p.raw == "" || ns != "" {
		return values, true
	}
	v, ok := values[p.raw]
	return v, ok
}

// updatePart is a task's "updates" value (see updatePayload), with a
// low-level graph's writes cut to its output channels.
func (p *projector) updatePart(ns string, ws []KV) any {
	if p.outputs == nil || ns != "" {
		return updatePayload(ws)
	}
	kept := make([]KV, 0, len(ws))
	for _, w := range ws {
		if p.outputs[w.Key] {
			kept = append(kept, w)
		}
	}
	if p.raw != "" {
		// As upstream: the value written, a list when written several
		// times, nil when not written.
		switch len(kept) {
		case 0:
			return nil
		case 1:
			return kept[0].Value
		}
		vs := make([]any, len(kept))
		for i, w := range kept {
			vs[i] = w.Value
		}
		return vs
	}
	return updatePayload(kept)
}

func (p *projector) on(m StreamMode) bool { return slices.Contains(p.modes, m) }

// shows says whether parts from the graph in namespace ns are streamed:
// the root's always, a subgraph's only with RunOptions.Subgraphs.
func (p *projector) shows(ns string) bool { return ns == "" || p.subgraphs }

func (p *projector) send(m StreamMode, data any) { p.sendNS(m, "", data) }

// sendNS sends a part from the graph running in namespace ns ("" = root;
// subgraphs "node:<task id>", nested with "|").
func (p *projector) sendNS(m StreamMode, ns string, data any) {
	path := []string{}
	if ns != "" {
		path = strings.Split(ns, "|")
	}
	p.emit(StreamPart{Mode: m, Namespace: path, Data: data})
}

func (p *projector) project(ev Event) {
	switch e := ev.(type) {
	case BarrierApplied:
		if e.Values != nil && p.on(StreamValues) && p.shows(e.Namespace) {
			if v, ok := p.valuesPart(e.Namespace, e.Values); ok {
				p.sendNS(StreamValues, e.Namespace, v)
			}
		}
	case RunStarted:
		if e.RunID != "" || e.ThreadID != "" {
			p.threadID, p.runID = e.ThreadID, e.RunID
		}
	case MessageChunk:
		if !p.on(StreamMessages) || !p.shows(e.Task.Namespace) {
			return
		}
		if id := messageID(e.Chunk); id != "" {
			p.sawMessage(id)
		}
		p.sendNS(StreamMessages, e.Task.Namespace, []any{e.Chunk, e.Metadata})
	case StepPlanned:
		if p.on(StreamMessages) {
			for _, t := range e.Tasks {
				if m, ok := t.Input.(map[string]any); ok {
					for _, v := range m {
						for _, msg := range messagesIn(v) {
							p.sawMessage(messageID(msg))
						}
					}
				}
			}
		}
		for _, t := range e.Tasks {
			if t.Name == Start || !p.shows(t.Namespace) {
				continue
			}
			payload := map[string]any{"id": t.ID, "name": t.Name, "input": t.Input, "triggers": t.Triggers}
			if p.on(StreamTasks) {
				p.sendNS(StreamTasks, t.Namespace, payload)
			}
			if p.on(StreamDebug) {
				p.sendNS(StreamDebug, t.Namespace, debugEnvelope(e.Step, "task", payload))
			}
		}
	case TaskFinished:
		ns := e.Task.Namespace
		if e.Task.Name == Start || !p.shows(ns) {
			return
		}
		if p.on(StreamUpdates) {
			u := map[string]any{e.Task.Name: p.updatePart(ns, e.Writes)}
			if e.Cached {
				u["__metadata__"] = map[string]any{"cached": true}
			}
			p.sendNS(StreamUpdates, ns, u)
		}
		if !e.Cached && p.on(StreamMessages) {
			p.nodeMessages(e)
		}
		if !e.Cached {
			p.taskResult(e.Task, map[string]any{"id": e.Task.ID, "name": e.Task.Name, "error": nil, "result": resultPayload(e.Writes), "interrupts": []any{}})
		}
	case TaskFailed:
		ns := e.Task.Namespace
		if !p.shows(ns) {
			return
		}
		p.taskResult(e.Task, map[string]any{"id": e.Task.ID, "name": e.Task.Name, "error": e.Err.Error(), "result": nil, "interrupts": []any{}})
	case CheckpointLoaded:
		p.project(e.CheckpointSaved)
	case CheckpointSaved:
		ns := e.Config.Namespace
		if p.noCheckpoints || !p.shows(ns) || !p.on(StreamCheckpoints) && !p.on(StreamDebug) {
			return
		}
		payload := checkpointPayload(e)
		if p.on(StreamCheckpoints) {
			p.sendNS(StreamCheckpoints, ns, payload)
		}
		if p.on(StreamDebug) {
			p.sendNS(StreamDebug, ns, debugEnvelope(e.Metadata.Step, "checkpoint", payload))
		}
	case Custom:
		if p.on(StreamCustom) && p.shows(e.Task.Namespace) {
			p.sendNS(StreamCustom, e.Task.Namespace, e.Payload)
		}
	case ValuesEmitted:
		ns := e.Namespace
		if !p.on(StreamValues) || !p.shows(ns) {
			return
		}
		if v, ok := p.valuesPart(ns, e.Values); ok {
			p.sendNS(StreamValues, ns, v)
		}
	case TaskInterrupted:
		ns := e.Task.Namespace
		if !p.shows(ns) {
			return
		}
		if p.on(StreamUpdates) {
			p.sendNS(StreamUpdates, ns, map[string]any{"__interrupt__": e.Interrupts})
		}
		if p.on(StreamValues) {
			// The state plus this task's interrupts; only the interrupts
			// for a graph streaming one channel's raw value.
			v := map[string]any{"__interrupt__": e.Interrupts}
			if ns != "" || p.raw == "" {
				for k, x := range e.Values {
					v[k] = x
				}
			}
			p.sendNS(StreamValues, ns, v)
		}
		// As upstream, an interrupted task has a result: no writes, its
		// interrupts.
		p.taskResult(e.Task, map[string]any{"id": e.Task.ID, "name": e.Task.Name, "error": nil, "result": map[string]any{}, "interrupts": e.Interrupts})
	case RunFinished:
		var interrupted *Interrupted
		if errors.As(e.Err, &interrupted) && p.on(StreamUpdates) && len(interrupted.Interrupts) == 0 {
			// A breakpoint: upstream streams an empty interrupt.
			p.send(StreamUpdates, map[string]any{"__interrupt__": []any{}})
		}
	}
}

// taskResult sends a task's result payload as "tasks" and "debug" parts.
func (p *projector) taskResult(t TaskInfo, payload map[string]any) {
	if p.on(StreamTasks) {
		p.sendNS(StreamTasks, t.Namespace, payload)
	}
	if p.on(StreamDebug) {
		p.sendNS(StreamDebug, t.Namespace, debugEnvelope(t.Step, "task_result", payload))
	}
}

// nodeMessages streams the messages a finished task wrote that were
// neither in a task's input nor streamed before.
func (p *projector) nodeMessages(e TaskFinished) {
	var md map[string]any
	for _, w := range e.Writes {
		for _, msg := range messagesIn(w.Value) {
			id := messageID(msg)
			if id != "" && p.seenMsgs[id] {
				continue
			}
			p.sawMessage(id)
			if md == nil {
				md = messageMetadata(e.Task, p.threadID, p.runID, nil)
			}
			p.sendNS(StreamMessages, e.Task.Namespace, []any{msg, md})
		}
	}
}

func (p *projector) sawMessage(msgID string) {
	if msgID == "" {
		return
	}
	if p.seenMsgs == nil {
		p.seenMsgs = map[string]bool{}
	}
	p.seenMsgs[msgID] = true
}

// A message is any value with a MessageID method (models.Message): the
// engine knows no message type of its own.
type identifiedMessage interface{ MessageID() string }

func messageID(v any) string {
	if m, ok := v.(identifiedMessage); ok {
		return m.MessageID()
	}
	return ""
}

// messagesIn returns v when it is a message, or the messages of a slice.
func messagesIn(v any) []any {
	if _, ok := v.(identifiedMessage); ok {
		return []any{v}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice || rv.Len() == 0 {
		return nil
	}
	if _, ok := rv.Index(0).Interface().(identifiedMessage); !ok {
		return nil
	}
	out := make([]any, 0, rv.Len())
	for i := range rv.Len() {
		if _, ok := rv.Index(i).Interface().(identifiedMessage); ok {
			out = append(out, rv.Index(i).Interface())
		}
	}
	return out
}

func debugEnvelope(step int, typ string, payload any) map[string]any {
	return map[string]any{"step": step, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "type": typ, "payload": payload}
}

// stateWrites are a task's writes to state keys (not routing channels).
func stateWrites(ws []KV) []KV {
	out := make([]KV, 0, len(ws))
	for _, w := range ws {
		if isStateChannel(w.Key) {
			out = append(out, w)
		}
	}
	return out
}

func isStateChannel(c string) bool {
	return c != tasksChannel && !reservedWrite(c) && c != Start &&
		!strings.HasPrefix(c, branchPrefix) && !strings.HasPrefix(c, joinPrefix)
}

// updatePayload is upstream's "updates" value for one task: nil for no
// writes, a map when each key is written once, a list of one-key maps when
// a key is written several times.
func updatePayload(ws []KV) any {
	sw := stateWrites(ws)
	if len(sw) == 0 {
		return nil
	}
	seen := map[string]bool{}
	repeated := false
	for _, w := range sw {
		if seen[w.Key] {
			repeated = true
		}
		seen[w.Key] = true
	}
	if repeated {
		list := make([]any, len(sw))
		for i, w := range sw {
			list[i] = map[string]any{w.Key: w.Value}
		}
		return list
	}
	m := make(map[string]any, len(sw))
	for _, w := range sw {
		m[w.Key] = w.Value
	}
	return m
}

// resultPayload is upstream's task result: each key's value, or
// {"$writes": [...]} when written several times.
func resultPayload(ws []KV) map[string]any {
	sw := stateWrites(ws)
	out := map[string]any{}
	counts := map[string]int{}
	for _, w := range sw {
		counts[w.Key]++
	}
	for _, w := range sw {
		if counts[w.Key] > 1 {
			m, _ := out[w.Key].(map[string]any)
			if m == nil {
				m = map[string]any{"$writes": []any{}}
				out[w.Key] = m
			}
			m["$writes"] = append(m["$writes"].([]any), w.Value)
			continue
		}
		out[w.Key] = w.Value
	}
	return out
}

func checkpointPayload(e CheckpointSaved) map[string]any {
	cfg := map[string]any{"configurable": map[string]any{"thread_id": e.Config.ThreadID, "checkpoint_ns": e.Config.Namespace, "checkpoint_id": e.Config.CheckpointID}}
	var parent any
	if e.Parent != nil {
		parent = map[string]any{"configurable": map[string]any{"thread_id": e.Parent.ThreadID, "checkpoint_ns": e.Parent.Namespace, "checkpoint_id": e.Parent.CheckpointID}}
	}
	next := e.Next
	if next == nil {
		next = []string{}
	}
	// Upstream's three shapes: a failed task, a task with a result, any
	// other task.
	tasks := make([]any, 0, len(e.Tasks))
	for _, t := range e.Tasks {
		var state any
		if t.Subgraph != nil {
			state = map[string]any{"configurable": map[string]any{"thread_id": t.Subgraph.ThreadID, "checkpoint_ns": t.Subgraph.Namespace}}
		}
		interrupts := make([]any, len(t.Interrupts))
		for i, in := range t.Interrupts {
			interrupts[i] = in
		}
		switch {
		case t.Error != "":
			tasks = append(tasks, map[string]any{"id": t.ID, "name": t.Name, "error": t.Error, "state": state})
		case len(t.Result) > 0:
			tasks = append(tasks, map[string]any{"id": t.ID, "name": t.Name, "result": t.Result, "interrupts": interrupts, "state": state})
		default:
			tasks = append(tasks, map[string]any{"id": t.ID, "name": t.Name, "interrupts": interrupts, "state": state})
		}
	}
	md := map[string]any{"source": string(e.Metadata.Source), "step": e.Metadata.Step, "parents": e.Metadata.Parents}
	for k, v := range e.Metadata.Extra {
		if _, known := md[k]; !known {
			md[k] = v
		}
	}
	if e.Metadata.RunID != "" {
		md["run_id"] = e.Metadata.RunID
	}
	return map[string]any{"config": cfg, "parent_config": parent, "values": e.Values, "metadata": md, "next": next, "tasks": tasks}
}

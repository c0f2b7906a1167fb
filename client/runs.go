package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RunsClient calls runs on a thread (/threads/{id}/runs); an empty
// thread id calls the stateless /runs routes instead.
type RunsClient struct{ c *Client }

// Run is one run of an assistant on a thread.
type Run struct {
	RunID       string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Status is pending, running, error, success, timeout or
	// interrupted (cancelled). A run that stopped at an interrupt did its
	// work: it is "success" and its thread "interrupted".
	Status   string         `json:"status"`
	Metadata map[string]any `json:"metadata"`
	// Kwargs are the arguments the run was created with.
	Kwargs            map[string]any `json:"kwargs"`
	MultitaskStrategy string         `json:"multitask_strategy"`
}

// Command resumes, updates or redirects a thread instead of giving it
// input.
type Command struct {
	// Resume answers the pending interrupt, or several by id:
	// map[string]any{interruptID: answer}.
	Resume any `json:"resume,omitempty"`
	// Update writes to the state first: a map, or a list of [key, value]
	// pairs.
	Update any `json:"update,omitempty"`
	// Goto names the node(s) to run next: a name, a Send as
	// map[string]any{"node": n, "input": v}, or a list of them.
	Goto any `json:"goto,omitempty"`
}

// RunConfig is a run's config.
type RunConfig struct {
	// RecursionLimit caps the run's supersteps; 0 keeps the assistant's.
	RecursionLimit int            `json:"recursion_limit,omitempty"`
	Tags           []string       `json:"tags,omitempty"`
	Configurable   map[string]any `json:"configurable,omitempty"`
}

// RunCreate are the options of a new run: what every run-creating call
// takes. A nil *RunCreate runs with no input (continuing the thread).
type RunCreate struct {
	// Input is the graph's input; nil continues from the current (or
	// selected) checkpoint. It cannot be combined with Command.
	Input   map[string]any
	Command *Command
	Config  *RunConfig
	Context map[string]any
	// Metadata is stored with the run.
	Metadata map[string]any
	// StreamMode lists what Stream sends: values (the default),
	// updates, debug, tasks, checkpoints, custom, messages-tuple.
	StreamMode []string
	// StreamSubgraphs streams subgraphs' events too, named
	// "mode|node:task_id".
	StreamSubgraphs bool
	// StreamResumable keeps the run's events so that Stream resumes
	// after a dropped connection without losing or repeating any.
	StreamResumable bool
	// InterruptBefore and InterruptAfter stop the run at these nodes
	// (["*"]: every node).
	InterruptBefore []string
	InterruptAfter  []string
	// Checkpoint or CheckpointID run from that checkpoint of the thread
	// (forking a branch when it is not the latest).
	Checkpoint   *Checkpoint
	CheckpointID string
	// MultitaskStrategy is what happens when the thread has an active
	// run: reject (a 409 *Error), interrupt or rollback (the active run
	// is stopped) or enqueue (the Superstep default).
	MultitaskStrategy string
	// OnDisconnect is cancel or continue: whether the run stops when the
	// streaming connection closes. The server's default is cancel for
	// Stream; a resumable Stream sends continue unless told otherwise.
	OnDisconnect string
	// OnCompletion is delete or keep, for stateless runs.
	OnCompletion string
	// IfNotExists "create" creates a missing thread; the default rejects
	// it with a 404 *Error.
	IfNotExists string
	// After delays the run's start; sent in seconds.
	After time.Duration
	// Webhook is called with the run when it ends.
	Webhook string
	// Durability is sync, async or exit.
	Durability string
}

// body is the run-create JSON for assistantID.
func (o *RunCreate) body(assistantID string, stream bool) (map[string]any, error) {
	b := map[string]any{"assistant_id": assistantID}
	if o == nil {
		return b, nil
	}
	if o.Input != nil && o.Command != nil {
		return nil, errors.New("client: RunCreate sets both Input and Command")
	}
	if o.Checkpoint != nil && o.CheckpointID != "" {
		return nil, errors.New("client: RunCreate sets both Checkpoint and CheckpointID")
	}
	if o.After < 0 {
		return nil, fmt.Errorf("client: RunCreate.After %v is negative", o.After)
	}
	set := func(k string, v any, ok bool) {
		if ok {
			b[k] = v
		}
	}
	set("input", o.Input, o.Input != nil)
	set("command", o.Command, o.Command != nil)
	set("config", o.Config, o.Config != nil)
	set("context", o.Context, o.Context != nil)
	set("metadata", o.Metadata, o.Metadata != nil)
	set("stream_mode", o.StreamMode, len(o.StreamMode) > 0)
	set("stream_subgraphs", true, o.StreamSubgraphs)
	set("stream_resumable", true, o.StreamResumable)
	set("interrupt_before", nodes(o.InterruptBefore), len(o.InterruptBefore) > 0)
	set("interrupt_after", nodes(o.InterruptAfter), len(o.InterruptAfter) > 0)
	set("checkpoint", o.Checkpoint, o.Checkpoint != nil)
	set("checkpoint_id", o.CheckpointID, o.CheckpointID != "")
	set("multitask_strategy", o.MultitaskStrategy, o.MultitaskStrategy != "")
	set("on_disconnect", o.OnDisconnect, o.OnDisconnect != "")
	// A resumable stream is meant to outlive its connection.
	set("on_disconnect", "continue", o.OnDisconnect == "" && o.StreamResumable && stream)
	set("on_completion", o.OnCompletion, o.OnCompletion != "")
	set("if_not_exists", o.IfNotExists, o.IfNotExists != "")
	set("after_seconds", o.After.Seconds(), o.After > 0)
	set("webhook", o.Webhook, o.Webhook != "")
	set("durability", o.Durability, o.Durability != "")
	return b, nil
}

// nodes sends ["*"] as "*", the API's spelling of every node.
func nodes(ns []string) any {
	if len(ns) == 1 && ns[0] == "*" {
		return "*"
	}
	return ns
}

func runsPath(threadID string, rest ...string) string {
	p := "/runs"
	if threadID != "" {
		p = threadPath(threadID) + "/runs"
	}
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// Create starts a run in the background and returns it (pending when
// it waits behind another run of its thread).
func (r *RunsClient) Create(ctx context.Context, threadID, assistantID string, opts *RunCreate) (*Run, error) {
	body, err := opts.body(assistantID, false)
	if err != nil {
		return nil, err
	}
	var out Run
	if err := r.c.do(ctx, request{method: http.MethodPost, path: runsPath(threadID), body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RunError is a run's failure reported in the body of Wait or Join (or
// as a stream's "error" event): the request itself succeeded.
type RunError struct {
	// Name is the error's kind, such as "GraphError".
	Name    string `json:"error"`
	Message string `json:"message"`
}

func (e *RunError) Error() string { return "superstep: run failed: " + e.Name + ": " + e.Message }

// RunResult is what Wait and Join answer once the run has ended.
type RunResult struct {
	// RunID and ThreadID name the run (from the answer's
	// Content-Location for Wait).
	RunID, ThreadID string
	// Values are the thread's values, without "__interrupt__".
	Values map[string]any
	// Interrupts are the questions the run stopped at, if any.
	Interrupts []Interrupt
}

// Wait runs and waits for the run to end: its values, its interrupts,
// or a *RunError when it failed.
func (r *RunsClient) Wait(ctx context.Context, threadID, assistantID string, opts *RunCreate) (*RunResult, error) {
	body, err := opts.body(assistantID, false)
	if err != nil {
		return nil, err
	}
	return r.result(ctx, request{method: http.MethodPost, path: runsPath(threadID, "wait"), body: body})
}

// Join waits for an existing run to end, answering as Wait.
func (r *RunsClient) Join(ctx context.Context, threadID, runID string) (*RunResult, error) {
	res, err := r.result(ctx, request{method: http.MethodGet, path: runsPath(threadID, runID, "join")})
	if res != nil {
		res.RunID, res.ThreadID = runID, threadID
	}
	return res, err
}

func (r *RunsClient) result(ctx context.Context, req request) (*RunResult, error) {
	resp, err := r.c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	res := &RunResult{}
	res.ThreadID, res.RunID = parseRunLocation(resp.Header.Get("Content-Location"))
	// The server writes newlines while the run goes on; the decoder
	// skips them as whitespace.
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return nil, fmt.Errorf("client: %s %s: decode the answer: %w", req.method, req.path, err)
	}
	if e, ok := raw["__error__"]; ok {
		re := &RunError{}
		if err := json.Unmarshal(e, re); err != nil {
			re.Message = string(e)
		}
		return res, re
	}
	if i, ok := raw["__interrupt__"]; ok {
		if err := json.Unmarshal(i, &res.Interrupts); err != nil {
			return nil, fmt.Errorf("client: %s %s: decode __interrupt__: %w", req.method, req.path, err)
		}
		delete(raw, "__interrupt__")
	}
	res.Values = make(map[string]any, len(raw))
	for k, v := range raw {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, err
		}
		res.Values[k] = x
	}
	return res, nil
}

// parseRunLocation reads "/threads/{t}/runs/{r}" or "/runs/{r}" (after
// any prefix the server is mounted under).
func parseRunLocation(loc string) (thread, run string) {
	i := strings.LastIndex(loc, "/runs/")
	if i < 0 {
		return "", ""
	}
	run, _, _ = strings.Cut(loc[i+len("/runs/"):], "/")
	if j := strings.LastIndex(loc[:i], "/threads/"); j >= 0 {
		thread = loc[j+len("/threads/") : i]
	}
	return thread, run
}

// Event is one server-sent event of a run's stream.
type Event struct {
	// Event is the event's name: metadata (first), values, updates,
	// debug, tasks, checkpoints, custom, messages, error; a subgraph's
	// carry their namespace: "values|node:task_id".
	Event string
	Data  json.RawMessage
	// ID is the event's position in the run's stream ("" for an error
	// event).
	ID string
}

// Stream reads a run's events one at a time:
//
//	for s.Next() { e := s.Event(); ... }
//	if err := s.Err(); err != nil { ... }
//
// Close it when done early.
type Stream struct {
	// RunID and ThreadID name the streamed run.
	RunID, ThreadID string

	c       *Client
	ctx     context.Context
	resp    *http.Response
	rd      *bufio.Reader
	resume  string // the path to reconnect to; "" when not resumable
	lastID  string
	cur     Event
	err     error
	retries int
}

// maxReconnects bounds reconnections in a row that bring no event.
const maxReconnects = 3

// Stream starts a run and streams its events. With StreamResumable, a
// dropped connection is reopened with the last event's id, so every
// event arrives once.
func (r *RunsClient) Stream(ctx context.Context, threadID, assistantID string, opts *RunCreate) (*Stream, error) {
	body, err := opts.body(assistantID, true)
	if err != nil {
		return nil, err
	}
	resp, err := r.c.sendStream(ctx, request{method: http.MethodPost, path: runsPath(threadID, "stream"), body: body}, "")
	if err != nil {
		return nil, err
	}
	s := &Stream{c: r.c, ctx: ctx, resp: resp, rd: bufio.NewReader(resp.Body)}
	s.ThreadID, s.RunID = parseRunLocation(resp.Header.Get("Content-Location"))
	if opts != nil && opts.StreamResumable {
		s.resume = resp.Header.Get("Location")
	}
	return s, nil
}

// JoinStreamOptions tune JoinStream. A nil *JoinStreamOptions streams
// the run's events from now on.
type JoinStreamOptions struct {
	// LastEventID replays the events after this one ("-1": all) of a
	// run created with StreamResumable.
	LastEventID string
	// StreamMode asks for these modes.
	StreamMode []string
	// CancelOnDisconnect cancels the run when this stream's connection
	// closes.
	CancelOnDisconnect bool
	// Resumable reconnects after a dropped connection, as Stream does;
	// set it for a run created with StreamResumable.
	Resumable bool
}

// JoinStream streams the events of an existing run.
func (r *RunsClient) JoinStream(ctx context.Context, threadID, runID string, opts *JoinStreamOptions) (*Stream, error) {
	path := runsPath(threadID, runID, "stream")
	q := url.Values{}
	last := ""
	resumable := false
	if o := opts; o != nil {
		last, resumable = o.LastEventID, o.Resumable
		if o.CancelOnDisconnect {
			q.Set("cancel_on_disconnect", "1")
		}
		switch len(o.StreamMode) {
		case 0:
		case 1:
			q.Set("stream_mode", o.StreamMode[0])
		default:
			b, _ := json.Marshal(o.StreamMode)
			q.Set("stream_mode", string(b))
		}
	}
	resp, err := r.c.sendStream(ctx, request{method: http.MethodGet, path: path, query: q}, last)
	if err != nil {
		return nil, err
	}
	s := &Stream{c: r.c, ctx: ctx, resp: resp, rd: bufio.NewReader(resp.Body), RunID: runID, ThreadID: threadID, lastID: last}
	if resumable {
		s.resume = path
		if len(q) > 0 {
			s.resume += "?" + q.Encode()
		}
	}
	return s, nil
}

// sendStream opens an event stream, with Last-Event-ID when lastID is
// set, and checks that the answer is one.
func (c *Client) sendStream(ctx context.Context, req request, lastID string) (*http.Response, error) {
	req.accept, req.lastEventID = "text/event-stream", lastID
	resp, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("client: %s %s: answered %q, not an event stream", req.method, req.path, ct)
	}
	return resp, nil
}

// Next reads the next event, reconnecting a resumable stream whose
// connection dropped. It returns false at the end of the stream or on an
// error (see Err).
func (s *Stream) Next() bool {
	for s.err == nil {
		ev, err := readEvent(s.rd)
		if err == nil {
			s.cur, s.retries = ev, 0
			if ev.ID != "" {
				s.lastID = ev.ID
			}
			return true
		}
		s.resp.Body.Close()
		if errors.Is(err, io.EOF) {
			// The server closed the stream: the run's end.
			s.err = io.EOF
			return false
		}
		if s.resume == "" || s.ctx.Err() != nil || s.retries >= maxReconnects {
			s.err = fmt.Errorf("client: the stream of run %s broke: %w", s.RunID, err)
			return false
		}
		s.retries++
		s.reconnect()
	}
	return false
}

// reconnect reopens a resumable stream after the last event read.
func (s *Stream) reconnect() {
	// Location may be a whole URL of this server.
	path, rawQuery, _ := strings.Cut(strings.TrimPrefix(s.resume, s.c.base), "?")
	q, _ := url.ParseQuery(rawQuery)
	last := s.lastID
	if last == "" {
		last = "-1"
	}
	resp, err := s.c.sendStream(s.ctx, request{method: http.MethodGet, path: path, query: q}, last)
	if err != nil {
		s.err = fmt.Errorf("client: reconnect the stream of run %s: %w", s.RunID, err)
		return
	}
	s.resp, s.rd = resp, bufio.NewReader(resp.Body)
}

// Event is the event Next read.
func (s *Stream) Event() Event { return s.cur }

// LastEventID is the id of the last event read: pass it to JoinStream to
// continue elsewhere.
func (s *Stream) LastEventID() string { return s.lastID }

// Err is the error that ended the stream; nil when the server ended it.
func (s *Stream) Err() error {
	if errors.Is(s.err, io.EOF) {
		return nil
	}
	return s.err
}

// Close closes the connection. With on_disconnect cancel (Stream's
// default unless resumable), that cancels the run.
func (s *Stream) Close() error {
	if s.err == nil {
		s.err = io.EOF
	}
	return s.resp.Body.Close()
}

// readEvent reads one event, skipping comments (heartbeats). io.EOF
// means the stream ended between events; anything else, mid-event or a
// broken connection, is another error.
func readEvent(rd *bufio.Reader) (Event, error) {
	var ev Event
	var data bytes.Buffer
	started := false
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && !started {
				return ev, io.EOF
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if started {
				ev.Data = json.RawMessage(data.Bytes())
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Event, started = value, true
		case "data":
			// Several data lines are joined with no separator, as the
			// SDKs do.
			data.WriteString(value)
			started = true
		case "id":
			ev.ID, started = value, true
		}
	}
}

// ListRunsOptions page and filter List. A nil *ListRunsOptions lists
// the 10 newest.
type ListRunsOptions struct {
	Limit  int
	Offset int
	// Status keeps the runs with this status.
	Status string
}

// List lists a thread's runs, newest first.
func (r *RunsClient) List(ctx context.Context, threadID string, opts *ListRunsOptions) ([]Run, error) {
	q := url.Values{}
	if o := opts; o != nil {
		if o.Limit != 0 {
			q.Set("limit", strconv.Itoa(o.Limit))
		}
		if o.Offset != 0 {
			q.Set("offset", strconv.Itoa(o.Offset))
		}
		if o.Status != "" {
			q.Set("status", o.Status)
		}
	}
	var out []Run
	if err := r.c.do(ctx, request{method: http.MethodGet, path: runsPath(threadID), query: q, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// Get returns a run; an unknown (or rolled back) one is an *Error with
// Status 404.
func (r *RunsClient) Get(ctx context.Context, threadID, runID string) (*Run, error) {
	var out Run
	if err := r.c.do(ctx, request{method: http.MethodGet, path: runsPath(threadID, runID), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelOptions tune Cancel. A nil *CancelOptions interrupts the run
// without waiting.
type CancelOptions struct {
	// Wait returns once the run has ended.
	Wait bool
	// Action is interrupt (the default: what the run saved stays) or
	// rollback (the run and its checkpoints are deleted).
	Action string
}

// Cancel stops a run.
func (r *RunsClient) Cancel(ctx context.Context, threadID, runID string, opts *CancelOptions) error {
	q := url.Values{"wait": {"0"}, "action": {"interrupt"}}
	if o := opts; o != nil {
		if o.Wait {
			q.Set("wait", "1")
		}
		if o.Action != "" {
			q.Set("action", o.Action)
		}
	}
	return r.c.do(ctx, request{method: http.MethodPost, path: runsPath(threadID, runID, "cancel"), query: q})
}

// Delete deletes a run that has ended.
func (r *RunsClient) Delete(ctx context.Context, threadID, runID string) error {
	return r.c.do(ctx, request{method: http.MethodDelete, path: runsPath(threadID, runID)})
}

// BatchRun is one run of CreateBatch.
type BatchRun struct {
	AssistantID string
	Options     *RunCreate
}

// CreateBatch starts several stateless runs in the background with one
// request (POST /runs/batch) and returns them in order.
func (r *RunsClient) CreateBatch(ctx context.Context, batch []BatchRun) ([]Run, error) {
	bodies := make([]map[string]any, 0, len(batch))
	for i, b := range batch {
		body, err := b.Options.body(b.AssistantID, false)
		if err != nil {
			return nil, fmt.Errorf("run %d: %w", i, err)
		}
		bodies = append(bodies, body)
	}
	var out []Run
	if err := r.c.do(ctx, request{method: http.MethodPost, path: "/runs/batch", body: bodies, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

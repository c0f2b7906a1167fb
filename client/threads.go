package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ThreadsClient calls /threads: conversations, their state and history.
type ThreadsClient struct{ c *Client }

// Thread is a conversation: its latest values, status and pending
// interrupts.
type Thread struct {
	ThreadID       string    `json:"thread_id"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	StateUpdatedAt time.Time `json:"state_updated_at"`
	// Metadata holds the caller's keys and, once a run started, graph_id
	// and assistant_id.
	Metadata map[string]any `json:"metadata"`
	// Status is idle, busy, interrupted or error.
	Status string         `json:"status"`
	Values map[string]any `json:"values"`
	// Interrupts are the pending interrupts by task id.
	Interrupts map[string][]Interrupt `json:"interrupts"`
	Config     map[string]any         `json:"config"`
	// Error is the last run's error, JSON null when there is none.
	Error json.RawMessage `json:"error"`
}

// Interrupt is a question a graph asked (engine.Interrupt): answer it by
// id with a run whose Command.Resume is map[string]any{id: answer}.
type Interrupt struct {
	Value any    `json:"value"`
	ID    string `json:"id"`
}

// Checkpoint names a saved state of a thread. CheckpointNS is "" for the
// thread's graph and "node:task_id|…" for a subgraph's.
type Checkpoint struct {
	ThreadID      string         `json:"thread_id,omitempty"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointID  string         `json:"checkpoint_id,omitempty"`
	CheckpointMap map[string]any `json:"checkpoint_map,omitempty"`
}

// ThreadState is a thread's state at a checkpoint.
type ThreadState struct {
	Values map[string]any `json:"values"`
	// Next are the nodes that run next; empty when the graph ended.
	Next  []string     `json:"next"`
	Tasks []ThreadTask `json:"tasks"`
	// Checkpoint is nil for a thread that has not run yet.
	Checkpoint       *Checkpoint    `json:"checkpoint"`
	ParentCheckpoint *Checkpoint    `json:"parent_checkpoint"`
	Metadata         map[string]any `json:"metadata"`
	CreatedAt        *time.Time     `json:"created_at"`
	// Interrupts are every task's pending interrupts.
	Interrupts []Interrupt `json:"interrupts"`
}

// ThreadTask is a task of a ThreadState: one pending or finished node.
type ThreadTask struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Path       []any           `json:"path"`
	Error      json.RawMessage `json:"error"`
	Interrupts []Interrupt     `json:"interrupts"`
	// Checkpoint names a pending subgraph's state when it was not asked
	// for; State is that state when it was (Subgraphs).
	Checkpoint *Checkpoint     `json:"checkpoint"`
	State      *ThreadState    `json:"state"`
	Result     json.RawMessage `json:"result"`
}

func threadPath(id string, rest ...string) string {
	p := "/threads/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// ThreadCreate is a thread to create; a nil *ThreadCreate makes an empty
// thread with a server-chosen id.
type ThreadCreate struct {
	// ThreadID is the new thread's id (a UUID); empty lets the server
	// choose.
	ThreadID string
	Metadata map[string]any
	// GraphID is stored as metadata graph_id, as the SDKs do.
	GraphID string
	// IfExists is "raise" (the default: a 409 *Error when ThreadID is
	// taken) or "do_nothing" (the existing thread is returned).
	IfExists string
	// Supersteps prefill the thread's history: each is applied as one
	// step of state updates.
	Supersteps []Superstep
	// TTL deletes the thread that long after its last change; sent in
	// minutes.
	TTL time.Duration
}

// Superstep is one step of updates applied by ThreadCreate.
type Superstep struct {
	Updates []StateUpdate `json:"updates"`
}

// StateUpdate is one update of a Superstep: values written as node
// AsNode, or a command.
type StateUpdate struct {
	Values  any      `json:"values"`
	Command *Command `json:"command,omitempty"`
	AsNode  string   `json:"as_node"`
}

// Create creates a thread.
func (t *ThreadsClient) Create(ctx context.Context, opts *ThreadCreate) (*Thread, error) {
	// The SDKs always send metadata; servers may rely on it.
	body := map[string]any{"metadata": map[string]any{}}
	if o := opts; o != nil {
		md := map[string]any{}
		for k, v := range o.Metadata {
			md[k] = v
		}
		if o.GraphID != "" {
			md["graph_id"] = o.GraphID
		}
		body["metadata"] = md
		if o.ThreadID != "" {
			body["thread_id"] = o.ThreadID
		}
		if o.IfExists != "" {
			body["if_exists"] = o.IfExists
		}
		if len(o.Supersteps) > 0 {
			body["supersteps"] = o.Supersteps
		}
		if o.TTL < 0 {
			return nil, fmt.Errorf("client: ThreadCreate.TTL %v is negative", o.TTL)
		}
		if o.TTL > 0 {
			body["ttl"] = map[string]any{"ttl": o.TTL.Minutes(), "strategy": "delete"}
		}
	}
	var out Thread
	if err := t.c.do(ctx, request{method: http.MethodPost, path: "/threads", body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Get returns a thread; an unknown one is an *Error with Status 404.
func (t *ThreadsClient) Get(ctx context.Context, threadID string) (*Thread, error) {
	var out Thread
	if err := t.c.do(ctx, request{method: http.MethodGet, path: threadPath(threadID), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ThreadUpdate changes a thread.
type ThreadUpdate struct {
	// Metadata is merged into the thread's.
	Metadata map[string]any
	// TTL, when positive, restarts the thread's expiry with this TTL.
	TTL time.Duration
}

// Update merges metadata into a thread and returns it.
func (t *ThreadsClient) Update(ctx context.Context, threadID string, u ThreadUpdate) (*Thread, error) {
	md := u.Metadata
	if md == nil {
		md = map[string]any{}
	}
	body := map[string]any{"metadata": md}
	if u.TTL < 0 {
		return nil, fmt.Errorf("client: ThreadUpdate.TTL %v is negative", u.TTL)
	}
	if u.TTL > 0 {
		body["ttl"] = map[string]any{"ttl": u.TTL.Minutes(), "strategy": "delete"}
	}
	var out Thread
	if err := t.c.do(ctx, request{method: http.MethodPatch, path: threadPath(threadID), body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Delete deletes a thread with its runs and checkpoints.
func (t *ThreadsClient) Delete(ctx context.Context, threadID string) error {
	return t.c.do(ctx, request{method: http.MethodDelete, path: threadPath(threadID)})
}

// Copy copies a thread with its history into a new thread, returned.
func (t *ThreadsClient) Copy(ctx context.Context, threadID string) (*Thread, error) {
	var out Thread
	if err := t.c.do(ctx, request{method: http.MethodPost, path: threadPath(threadID, "copy"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ThreadSearch filters and pages threads. A nil *ThreadSearch returns
// the 10 newest.
type ThreadSearch struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	// IDs keeps these threads only.
	IDs    []string       `json:"ids,omitempty"`
	Values map[string]any `json:"values,omitempty"`
	// Status is idle, busy, interrupted or error.
	Status string `json:"status,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Offset int    `json:"offset,omitempty"`
	// SortBy is thread_id, status, created_at, updated_at or
	// state_updated_at; SortOrder asc or desc.
	SortBy    string   `json:"sort_by,omitempty"`
	SortOrder string   `json:"sort_order,omitempty"`
	Select    []string `json:"select,omitempty"`
}

// ThreadPage is one page of a thread search.
type ThreadPage struct {
	Threads []Thread
	// Next is the offset of the next page, or -1 when this is the last.
	Next int
	// Total counts every match, -1 when the server does not say.
	Total int
}

// Search returns a page of threads and where the next one starts.
func (t *ThreadsClient) Search(ctx context.Context, s *ThreadSearch) (*ThreadPage, error) {
	if s == nil {
		s = &ThreadSearch{}
	}
	out := &ThreadPage{}
	next, total, err := t.c.page(ctx, "/threads/search", s, &out.Threads)
	if err != nil {
		return nil, err
	}
	out.Next, out.Total = next, total
	if out.Threads == nil {
		out.Threads = []Thread{}
	}
	return out, nil
}

// ThreadCount filters what Count counts; nil counts every thread.
type ThreadCount struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	Values   map[string]any `json:"values,omitempty"`
	Status   string         `json:"status,omitempty"`
}

// Count counts the threads that match.
func (t *ThreadsClient) Count(ctx context.Context, f *ThreadCount) (int, error) {
	if f == nil {
		f = &ThreadCount{}
	}
	var n int
	if err := t.c.do(ctx, request{method: http.MethodPost, path: "/threads/count", body: f, out: &n}); err != nil {
		return 0, err
	}
	return n, nil
}

// GetStateOptions choose which state GetState reads. A nil
// *GetStateOptions reads the latest.
type GetStateOptions struct {
	// CheckpointID reads the state at this checkpoint of the thread's
	// graph.
	CheckpointID string
	// Checkpoint reads the state at this checkpoint, which may be a
	// subgraph's (CheckpointNS); it cannot be combined with CheckpointID.
	Checkpoint *Checkpoint
	// Subgraphs fills in the state of pending subgraph tasks
	// (ThreadTask.State).
	Subgraphs bool
}

// GetState reads a thread's state. A thread that has not run yet has
// empty values and a nil Checkpoint.
func (t *ThreadsClient) GetState(ctx context.Context, threadID string, opts *GetStateOptions) (*ThreadState, error) {
	var out ThreadState
	req := request{method: http.MethodGet, path: threadPath(threadID, "state"), out: &out}
	if o := opts; o != nil {
		switch {
		case o.Checkpoint != nil && o.CheckpointID != "":
			return nil, fmt.Errorf("client: GetStateOptions sets both CheckpointID and Checkpoint")
		case o.Checkpoint != nil:
			req.method, req.path = http.MethodPost, threadPath(threadID, "state", "checkpoint")
			req.body = map[string]any{"checkpoint": o.Checkpoint, "subgraphs": o.Subgraphs}
		case o.CheckpointID != "":
			req.path = threadPath(threadID, "state", url.PathEscape(o.CheckpointID))
		}
		if o.Subgraphs && req.body == nil {
			req.query = url.Values{"subgraphs": {"true"}}
		}
	}
	if err := t.c.do(ctx, req); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateStateOptions say how UpdateState writes.
type UpdateStateOptions struct {
	// AsNode writes Values as if this node had returned them (its
	// outgoing edges pick the next nodes); empty lets the server pick
	// the last node that ran. "__copy__" with nil Values copies the
	// checkpoint as a sibling fork (re-run from here); "__input__"
	// writes Values as graph input; "__end__" with nil Values clears the
	// pending tasks.
	AsNode string
	// CheckpointID or Checkpoint update that checkpoint instead of the
	// latest: the result forks a branch from it.
	CheckpointID string
	Checkpoint   *Checkpoint
}

// UpdateState writes values (nil is sent as JSON null) to a thread's
// state and returns the checkpoint it made.
func (t *ThreadsClient) UpdateState(ctx context.Context, threadID string, values map[string]any, opts *UpdateStateOptions) (*Checkpoint, error) {
	body := map[string]any{"values": values}
	if o := opts; o != nil {
		if o.AsNode != "" {
			body["as_node"] = o.AsNode
		}
		if o.CheckpointID != "" {
			body["checkpoint_id"] = o.CheckpointID
		}
		if o.Checkpoint != nil {
			body["checkpoint"] = o.Checkpoint
		}
	}
	var out struct {
		Checkpoint Checkpoint `json:"checkpoint"`
	}
	if err := t.c.do(ctx, request{method: http.MethodPost, path: threadPath(threadID, "state"), body: body, out: &out}); err != nil {
		return nil, err
	}
	return &out.Checkpoint, nil
}

// PatchState merges metadata into the metadata of the thread's latest
// checkpoint.
func (t *ThreadsClient) PatchState(ctx context.Context, threadID string, metadata map[string]any) error {
	if metadata == nil {
		metadata = map[string]any{}
	}
	var ignored json.RawMessage
	return t.c.do(ctx, request{method: http.MethodPatch, path: threadPath(threadID, "state"),
		body: map[string]any{"metadata": metadata}, out: &ignored})
}

// HistoryOptions page and filter GetHistory. A nil *HistoryOptions
// returns the 10 newest states.
type HistoryOptions struct {
	// Limit is the page size; 0 means 10.
	Limit int
	// Before returns the states older than this checkpoint: pass the
	// Checkpoint of the last state of the previous page.
	Before *Checkpoint
	// Metadata keeps the states whose checkpoint metadata holds these
	// pairs, such as {"source": "update"}.
	Metadata map[string]any
	// Checkpoint selects a subgraph's history by its CheckpointNS.
	Checkpoint *Checkpoint
}

// GetHistory lists a thread's states newest first, each with its parent
// checkpoint.
func (t *ThreadsClient) GetHistory(ctx context.Context, threadID string, opts *HistoryOptions) ([]ThreadState, error) {
	// Sent always: the API's own default is a single state.
	body := map[string]any{"limit": 10}
	if o := opts; o != nil {
		if o.Limit < 0 {
			return nil, fmt.Errorf("client: HistoryOptions.Limit %d is negative", o.Limit)
		}
		if o.Limit > 0 {
			body["limit"] = o.Limit
		}
		if o.Before != nil {
			body["before"] = map[string]any{"checkpoint_id": o.Before.CheckpointID, "checkpoint_ns": o.Before.CheckpointNS}
		}
		if o.Metadata != nil {
			body["metadata"] = o.Metadata
		}
		if o.Checkpoint != nil {
			body["checkpoint"] = o.Checkpoint
		}
	}
	var out []ThreadState
	if err := t.c.do(ctx, request{method: http.MethodPost, path: threadPath(threadID, "history"), body: body, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

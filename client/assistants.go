package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AssistantsClient calls /assistants: the graphs a server serves and
// their configured variants. Every id argument may also be a graph id
// ("agent"), which names that graph's own assistant.
type AssistantsClient struct{ c *Client }

// Assistant is a graph with a configuration: each graph has one created
// by the server (metadata created_by: system), and clients add more.
type Assistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	// Version counts the assistant's changes, from 1.
	Version     int       `json:"version"`
	Name        string    `json:"name"`
	Description *string   `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Graph is an assistant's graph as GetGraph draws it: nodes (the
// schema nodes __start__ and __end__, runnable ones with a metadata
// "__interrupt" of "before", "after" or "before,after" for breakpoints)
// and edges.
type Graph struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is a node of a Graph; a subgraph's node flattened by xray has
// the id "parent:child".
type GraphNode struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	Data     json.RawMessage `json:"data"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// GraphEdge is an edge of a Graph. Data is the router's label when it
// differs from the target's name.
type GraphEdge struct {
	Source      string `json:"source"`
	Target      string `json:"target"`
	Data        string `json:"data,omitempty"`
	Conditional bool   `json:"conditional"`
}

// Schemas are a graph's JSON Schemas; a schema the graph has none of is
// JSON null.
type Schemas struct {
	// GraphID is set by GetSchemas, not by GetSubgraphs.
	GraphID       string          `json:"graph_id,omitempty"`
	InputSchema   json.RawMessage `json:"input_schema"`
	OutputSchema  json.RawMessage `json:"output_schema"`
	StateSchema   json.RawMessage `json:"state_schema"`
	ConfigSchema  json.RawMessage `json:"config_schema"`
	ContextSchema json.RawMessage `json:"context_schema"`
}

func assistantPath(id string, rest ...string) string {
	p := "/assistants/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// Get returns an assistant; an unknown one is an *Error with Status 404.
func (a *AssistantsClient) Get(ctx context.Context, assistantID string) (*Assistant, error) {
	var out Assistant
	if err := a.c.do(ctx, request{method: http.MethodGet, path: assistantPath(assistantID), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetGraphOptions tune GetGraph. A nil *GetGraphOptions draws subgraphs
// as single nodes.
type GetGraphOptions struct {
	// Xray draws the nodes of subgraphs, every level deep.
	Xray bool
	// Depth, when positive, draws subgraphs that many levels deep
	// instead (and implies Xray).
	Depth int
}

// GetGraph draws an assistant's graph.
func (a *AssistantsClient) GetGraph(ctx context.Context, assistantID string, opts *GetGraphOptions) (*Graph, error) {
	q := url.Values{}
	if opts != nil {
		switch {
		case opts.Depth < 0:
			return nil, fmt.Errorf("client: GetGraphOptions.Depth %d is negative", opts.Depth)
		case opts.Depth > 0:
			q.Set("xray", strconv.Itoa(opts.Depth))
		case opts.Xray:
			q.Set("xray", "true")
		}
	}
	var out Graph
	if err := a.c.do(ctx, request{method: http.MethodGet, path: assistantPath(assistantID, "graph"), query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSchemas returns the JSON Schemas of an assistant's graph.
func (a *AssistantsClient) GetSchemas(ctx context.Context, assistantID string) (*Schemas, error) {
	var out Schemas
	if err := a.c.do(ctx, request{method: http.MethodGet, path: assistantPath(assistantID, "schemas"), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetSubgraphsOptions tune GetSubgraphs. A nil *GetSubgraphsOptions lists
// the graph's direct subgraphs.
type GetSubgraphsOptions struct {
	// Namespace keeps the subgraph at this path ("sub", or "sub|inner"
	// for a nested one).
	Namespace string
	// Recurse lists the subgraphs of subgraphs too.
	Recurse bool
}

// GetSubgraphs returns the schemas of an assistant's subgraphs by
// namespace ("sub", "sub|inner").
func (a *AssistantsClient) GetSubgraphs(ctx context.Context, assistantID string, opts *GetSubgraphsOptions) (map[string]Schemas, error) {
	path := assistantPath(assistantID, "subgraphs")
	q := url.Values{}
	if opts != nil {
		if opts.Namespace != "" {
			path += "/" + url.PathEscape(opts.Namespace)
		}
		if opts.Recurse {
			q.Set("recurse", "true")
		}
	}
	out := map[string]Schemas{}
	if err := a.c.do(ctx, request{method: http.MethodGet, path: path, query: q, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// AssistantCreate is an assistant to create. GraphID is required.
type AssistantCreate struct {
	// AssistantID is the new assistant's id (a UUID); empty lets the
	// server choose one.
	AssistantID string `json:"assistant_id,omitempty"`
	// GraphID is the registered graph the assistant runs.
	GraphID  string         `json:"graph_id"`
	Config   map[string]any `json:"config,omitempty"`
	Context  map[string]any `json:"context,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// IfExists is what happens when AssistantID is taken: "raise" (the
	// default: a 409 *Error) or "do_nothing" (the existing one is
	// returned).
	IfExists string `json:"if_exists,omitempty"`
	// Name defaults to "Untitled" on a Superstep server.
	Name        string  `json:"name,omitempty"`
	Description *string `json:"description,omitempty"`
}

// Create creates an assistant.
func (a *AssistantsClient) Create(ctx context.Context, as AssistantCreate) (*Assistant, error) {
	if as.GraphID == "" {
		return nil, fmt.Errorf("client: AssistantCreate.GraphID is required")
	}
	var out Assistant
	if err := a.c.do(ctx, request{method: http.MethodPost, path: "/assistants", body: as, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// AssistantUpdate changes an assistant; nil fields are left as they are.
// Every update makes a new version, which becomes the current one.
type AssistantUpdate struct {
	GraphID     *string        `json:"graph_id,omitempty"`
	Config      map[string]any `json:"config,omitempty"`
	Context     map[string]any `json:"context,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Name        *string        `json:"name,omitempty"`
	Description *string        `json:"description,omitempty"`
}

// Update changes an assistant and returns its new version.
func (a *AssistantsClient) Update(ctx context.Context, assistantID string, u AssistantUpdate) (*Assistant, error) {
	var out Assistant
	if err := a.c.do(ctx, request{method: http.MethodPatch, path: assistantPath(assistantID), body: u, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Delete deletes an assistant with all its versions. Its threads are
// kept.
func (a *AssistantsClient) Delete(ctx context.Context, assistantID string) error {
	return a.c.do(ctx, request{method: http.MethodDelete, path: assistantPath(assistantID)})
}

// AssistantSearch filters and pages assistants. A nil *AssistantSearch
// returns the first 10, newest first.
type AssistantSearch struct {
	GraphID string `json:"graph_id,omitempty"`
	Name    string `json:"name,omitempty"`
	// Metadata keeps the assistants whose metadata holds these pairs.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Limit is the page size; 0 means the server's default (10).
	Limit  int `json:"limit,omitempty"`
	Offset int `json:"offset,omitempty"`
	// SortBy is assistant_id, graph_id, name, created_at or updated_at;
	// SortOrder asc or desc.
	SortBy    string `json:"sort_by,omitempty"`
	SortOrder string `json:"sort_order,omitempty"`
	// Select keeps only these fields of each assistant (the others are
	// left zero).
	Select []string `json:"select,omitempty"`
}

// AssistantPage is one page of a search.
type AssistantPage struct {
	Assistants []Assistant
	// Next is the offset of the next page, or -1 when this is the last.
	Next int
	// Total counts every match, -1 when the server does not say.
	Total int
}

// Search returns a page of assistants and where the next one starts.
func (a *AssistantsClient) Search(ctx context.Context, s *AssistantSearch) (*AssistantPage, error) {
	if s == nil {
		s = &AssistantSearch{}
	}
	out := &AssistantPage{}
	next, total, err := a.c.page(ctx, "/assistants/search", s, &out.Assistants)
	if err != nil {
		return nil, err
	}
	out.Next, out.Total = next, total
	if out.Assistants == nil {
		out.Assistants = []Assistant{}
	}
	return out, nil
}

// page posts a search and reads its pagination headers (-1 when absent).
func (c *Client) page(ctx context.Context, path string, body, out any) (next, total int, err error) {
	resp, err := c.send(ctx, request{method: http.MethodPost, path: path, body: body})
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return 0, 0, fmt.Errorf("client: POST %s: decode the answer: %w", path, err)
	}
	header := func(name string) int {
		n, err := strconv.Atoi(resp.Header.Get(name))
		if err != nil {
			return -1
		}
		return n
	}
	return header("X-Pagination-Next"), header("X-Pagination-Total"), nil
}

// AssistantCount filters what Count counts; nil counts every assistant.
type AssistantCount struct {
	GraphID  string         `json:"graph_id,omitempty"`
	Name     string         `json:"name,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Count counts the assistants that match.
func (a *AssistantsClient) Count(ctx context.Context, f *AssistantCount) (int, error) {
	if f == nil {
		f = &AssistantCount{}
	}
	var n int
	if err := a.c.do(ctx, request{method: http.MethodPost, path: "/assistants/count", body: f, out: &n}); err != nil {
		return 0, err
	}
	return n, nil
}

// AssistantVersion is one saved version of an assistant.
type AssistantVersion struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	CreatedAt   time.Time      `json:"created_at"`
}

// VersionsOptions filter and page GetVersions; nil returns the newest 10.
type VersionsOptions struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	Limit    int            `json:"limit,omitempty"`
	Offset   int            `json:"offset,omitempty"`
}

// GetVersions lists an assistant's versions, newest first.
func (a *AssistantsClient) GetVersions(ctx context.Context, assistantID string, opts *VersionsOptions) ([]AssistantVersion, error) {
	if opts == nil {
		opts = &VersionsOptions{}
	}
	var out []AssistantVersion
	if err := a.c.do(ctx, request{method: http.MethodPost, path: assistantPath(assistantID, "versions"), body: opts, out: &out}); err != nil {
		return nil, err
	}
	return out, nil
}

// SetLatest makes an earlier version the assistant's current one.
func (a *AssistantsClient) SetLatest(ctx context.Context, assistantID string, version int) (*Assistant, error) {
	var out Assistant
	if err := a.c.do(ctx, request{method: http.MethodPost, path: assistantPath(assistantID, "latest"),
		body: map[string]any{"version": version}, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

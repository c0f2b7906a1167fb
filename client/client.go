package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls one Superstep server (or any LangGraph Agent Server). It
// is safe for concurrent use. Its areas are sub-clients, as in the SDKs:
// c.Store.PutItem, c.Threads.Get, c.Runs.Stream.
type Client struct {
	// Assistants calls /assistants.
	Assistants *AssistantsClient
	// Threads calls /threads and a thread's state and history.
	Threads *ThreadsClient
	// Runs calls /threads/{id}/runs and the stateless /runs.
	Runs *RunsClient
	// Store calls /store.
	Store *StoreClient

	base   string
	apiKey string
	http   *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends key as x-api-key on every request: a Superstep server
// started with a token (the Studio's) requires it.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithHTTPClient makes requests with hc instead of http.DefaultClient:
// for timeouts, proxies, TLS settings or a test transport. Its Timeout
// also bounds streams, so prefer a context deadline per call.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client for the server at baseURL, such as
// "http://localhost:8123" or "https://agents.example.com/api" (the API's
// prefix included when the server mounts it under one). A trailing "/" is
// stripped.
func New(baseURL string, opts ...Option) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: want http:// or https://, a host, and no query, as http://localhost:8123", baseURL)
	}
	c := &Client{base: base, http: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	c.Assistants = &AssistantsClient{c: c}
	c.Threads = &ThreadsClient{c: c}
	c.Runs = &RunsClient{c: c}
	c.Store = &StoreClient{c: c}
	return c, nil
}

// BaseURL is the server's URL as requests use it (without a trailing "/").
func (c *Client) BaseURL() string { return c.base }

// Error is a non-2xx answer. Use errors.As to read it:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Status == http.StatusNotFound { ... }
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Detail is the server's explanation: the "detail" of its JSON error
	// body, or the body's text when it is not one.
	Detail string
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("superstep: %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("superstep: %d %s: %s", e.Status, http.StatusText(e.Status), e.Detail)
}

// maxErrorBody caps how much of an error body is read into Error.Detail.
const maxErrorBody = 64 << 10

// request is one call: body, when non-nil, is sent as JSON; out, when
// non-nil, receives the JSON answer (left alone on 202 and 204).
type request struct {
	method string
	path   string
	query  url.Values
	body   any
	out    any
	// accept overrides the Accept header (application/json).
	accept string
	// lastEventID, when set, is sent as Last-Event-ID (resuming a stream).
	lastEventID string
}

// do sends req and decodes the answer, or returns an *Error for a non-2xx
// status.
func (c *Client) do(ctx context.Context, req request) error {
	resp, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusAccepted || req.out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(req.out); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", req.method, req.path, err)
	}
	return nil
}

// send makes the HTTP request and returns the response of a 2xx status;
// any other status is read into an *Error and the body closed.
func (c *Client) send(ctx context.Context, req request) (*http.Response, error) {
	u := c.base + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		b, err := json.Marshal(req.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: encode the body: %w", req.method, req.path, err)
		}
		body = bytes.NewReader(b)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", req.method, req.path, err)
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	if req.accept != "" {
		hr.Header.Set("Accept", req.accept)
	}
	if req.lastEventID != "" {
		hr.Header.Set("Last-Event-ID", req.lastEventID)
	}
	if c.apiKey != "" {
		hr.Header.Set("X-Api-Key", c.apiKey)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", req.method, req.path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, readError(resp)
}

// readError builds the *Error of a failed response.
func readError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{Status: resp.StatusCode, Detail: strings.TrimSpace(string(b))}
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &body) == nil && len(body.Detail) > 0 {
		// FastAPI's validation errors carry a list; a string is ours.
		var s string
		if json.Unmarshal(body.Detail, &s) == nil {
			e.Detail = s
		} else {
			e.Detail = string(body.Detail)
		}
	}
	return e
}

// Ok checks that the server is up: nil when GET /ok answers {"ok": true}.
// It needs no API key.
func (c *Client) Ok(ctx context.Context) error {
	var out struct {
		Ok bool `json:"ok"`
	}
	if err := c.do(ctx, request{method: http.MethodGet, path: "/ok", out: &out}); err != nil {
		return err
	}
	if !out.Ok {
		return errors.New("client: GET /ok answered without \"ok\": true")
	}
	return nil
}

// Info is what GET /info says about the server.
type Info struct {
	// Version is the Agent Server API version the server follows.
	Version string `json:"version"`
	// Flags say which optional areas the server serves ("store",
	// "crons", ...).
	Flags map[string]bool `json:"flags"`
	// Metadata is free-form; a Superstep server sets "server": "superstep".
	Metadata map[string]any `json:"metadata"`
}

// Info reads the server's version and feature flags.
func (c *Client) Info(ctx context.Context) (*Info, error) {
	var out Info
	if err := c.do(ctx, request{method: http.MethodGet, path: "/info", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

package embed

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
	"time"
	"unicode/utf8"
)

// Defaults shared by the HTTP embedders.
const (
	// DefaultBatchSize is how many texts go in one request when the
	// configuration leaves BatchSize at 0. Servers cap inputs per request
	// (OpenAI at 2048) and request bodies; 128 stays well inside both.
	DefaultBatchSize = 128
	// DefaultTimeout bounds one request when the configuration leaves
	// Timeout at 0.
	DefaultTimeout = 30 * time.Second

	// maxResponseBytes bounds how much of a 2xx body is read: 128 vectors
	// of 3072 floats as JSON are about 8 MB, so 64 MiB means a broken or
	// hostile server, not a big batch.
	maxResponseBytes = 64 << 20
	// maxErrorSnippet bounds the body excerpt kept in a StatusError, so
	// an HTML error page does not flood logs.
	maxErrorSnippet = 512
)

// StatusError is returned when an embedding server answers with a non-2xx
// status. errors.Is(err, ErrHTTPStatus) reports it; errors.As gives the
// details.
type StatusError struct {
	// URL is the endpoint that was called, with any password redacted.
	URL string
	// StatusCode is the HTTP status, e.g. 401 or 503.
	StatusCode int
	// Body is the start of the response body (at most 512 bytes, valid
	// UTF-8), which usually says what the server disliked.
	Body string
}

// Error says which endpoint answered what.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("embed: POST %s: %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrHTTPStatus) true.
func (e *StatusError) Unwrap() error { return ErrHTTPStatus }

// Retryable reports whether the same request may succeed later: timeouts,
// rate limits and server errors, not bad requests or bad credentials.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// httpEmbedder is what the OpenAI and Ollama embedders share: batching,
// timeouts, status and size checks, dimension checks. The two differ only
// in the endpoint and the JSON shapes.
type httpEmbedder struct {
	name      string
	dim       int
	endpoint  string // full URL
	redacted  string // endpoint for error messages
	apiKey    string
	batchSize int
	timeout   time.Duration
	client    *http.Client
	// request builds the JSON body for one batch.
	request func(batch []string) any
	// decode parses a 2xx body into exactly n vectors in input order, or
	// returns an error wrapping ErrMalformedResponse.
	decode func(body []byte, n int) ([][]float32, error)
}

// httpSettings are the configuration fields common to both HTTP embedders.
type httpSettings struct {
	kind, baseURL, path, model string
	dim, batchSize             int
	timeout                    time.Duration
	client                     *http.Client
}

func newHTTPEmbedder(s httpSettings) (*httpEmbedder, error) {
	if strings.TrimSpace(s.model) == "" {
		return nil, fmt.Errorf("%w: %s: Model is required", ErrInvalidConfig, s.kind)
	}
	if s.dim < 1 {
		return nil, fmt.Errorf("%w: %s: Dim must be the model's vector length (≥ 1), got %d", ErrInvalidConfig, s.kind, s.dim)
	}
	if s.batchSize < 0 {
		return nil, fmt.Errorf("%w: %s: BatchSize must be ≥ 0 (0 means %d), got %d", ErrInvalidConfig, s.kind, DefaultBatchSize, s.batchSize)
	}
	if s.timeout < 0 {
		return nil, fmt.Errorf("%w: %s: Timeout must be ≥ 0 (0 means %s), got %s", ErrInvalidConfig, s.kind, DefaultTimeout, s.timeout)
	}
	u, err := url.Parse(strings.TrimRight(s.baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %s: BaseURL %q is not an http(s) URL like http://localhost:11434", ErrInvalidConfig, s.kind, s.baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s: BaseURL %q must not have a query or fragment", ErrInvalidConfig, s.kind, s.baseURL)
	}
	u = u.JoinPath(s.path)
	h := &httpEmbedder{
		name:      s.kind + ":" + s.model,
		dim:       s.dim,
		endpoint:  u.String(),
		redacted:  u.Redacted(),
		batchSize: cmpOr(s.batchSize, DefaultBatchSize),
		timeout:   cmpOr(s.timeout, DefaultTimeout),
		client:    s.client,
	}
	if h.client == nil {
		h.client = http.DefaultClient
	}
	return h, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// embed splits texts into batches, posts each, and checks every vector.
func (h *httpEmbedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += h.batchSize {
		batch := texts[start:min(start+h.batchSize, len(texts))]
		vecs, err := h.post(ctx, batch)
		if err != nil {
			if len(texts) > len(batch) {
				return nil, fmt.Errorf("texts %d..%d of %d: %w", start, start+len(batch)-1, len(texts), err)
			}
			return nil, err
		}
		for i, v := range vecs {
			if len(v) != h.dim {
				return nil, fmt.Errorf("%w: %s returned %d values for text %d, but Dim is configured as %d; set Dim to the model's vector length",
					ErrDimensionMismatch, h.name, len(v), start+i, h.dim)
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// post sends one batch and decodes the answer.
func (h *httpEmbedder) post(ctx context.Context, batch []string) ([][]float32, error) {
	body, err := json.Marshal(h.request(batch))
	if err != nil {
		return nil, fmt.Errorf("embed: encoding request: %w", err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, h.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidConfig, h.name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if h.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.apiKey)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, h.transportError(ctx, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorSnippet+1))
		return nil, &StatusError{URL: h.redacted, StatusCode: resp.StatusCode, Body: bodySnippet(snippet)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, h.transportError(ctx, err)
	}
	if len(data) > maxResponseBytes {
		return nil, fmt.Errorf("%w: %s: response body exceeds %d bytes", ErrMalformedResponse, h.redacted, maxResponseBytes)
	}
	vecs, err := h.decode(data, len(batch))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.redacted, err)
	}
	return vecs, nil
}

// transportError explains a failed round trip. It tells the embedder's
// own Timeout apart from the caller's context (which was not done), and
// keeps the context error in the chain for errors.Is.
func (h *httpEmbedder) transportError(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("embed: POST %s: no complete answer within %s: %w", h.redacted, h.timeout, err)
	}
	return fmt.Errorf("embed: POST %s: %w", h.redacted, err)
}

// bodySnippet turns the start of an error body into a short, printable
// string, marking truncation.
func bodySnippet(b []byte) string {
	truncated := len(b) > maxErrorSnippet
	if truncated {
		b = b[:maxErrorSnippet]
		// Drop the bytes of a character the cut split in half.
		for range utf8.UTFMax - 1 {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD"))
	if truncated {
		s += "…"
	}
	return s
}

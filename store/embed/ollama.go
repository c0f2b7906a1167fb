package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// OllamaConfig configures an embedder for an Ollama server's /api/embed
// endpoint (Ollama 0.3.4 and later; the older /api/embeddings takes one
// text per request and is not used).
type OllamaConfig struct {
	// BaseURL is the server root; requests go to BaseURL + "/api/embed".
	// Empty means "http://localhost:11434", Ollama's default.
	BaseURL string
	// Model is the model name, e.g. "nomic-embed-text". Required.
	Model string
	// Dim is the length of the model's vectors (768 for nomic-embed-text).
	// Required: every returned vector is checked against it.
	Dim int
	// BatchSize is the most texts sent in one request; longer inputs are
	// split into several requests. 0 means DefaultBatchSize.
	BatchSize int
	// Timeout bounds each request. 0 means DefaultTimeout. The first
	// request after Ollama starts includes loading the model, which can
	// take many seconds. The context passed to Embed also applies.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// Ollama embeds texts with a local or remote Ollama server. It is safe for
// concurrent use.
type Ollama struct {
	h *httpEmbedder
}

// NewOllama checks cfg and returns the embedder, named "ollama:<Model>".
// It sends nothing until Embed is called. A bad configuration is an error
// wrapping ErrInvalidConfig.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	h, err := newHTTPEmbedder(httpSettings{
		kind: "ollama", baseURL: cmpOr(cfg.BaseURL, "http://localhost:11434"), path: "/api/embed",
		model: cfg.Model, dim: cfg.Dim, batchSize: cfg.BatchSize, timeout: cfg.Timeout, client: cfg.HTTPClient,
	})
	if err != nil {
		return nil, err
	}
	h.request = func(batch []string) any { return ollamaRequest{Model: cfg.Model, Input: batch} }
	h.decode = decodeOllama
	return &Ollama{h: h}, nil
}

// Name returns "ollama:<Model>".
func (o *Ollama) Name() string { return o.h.name }

// Dim returns the configured dimension.
func (o *Ollama) Dim() int { return o.h.dim }

// Embed returns one vector per text, in input order, sending at most
// BatchSize texts per request. It fails as a whole: no partial results.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.h.embed(ctx, texts)
}

type ollamaRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type ollamaResponse struct {
	Embeddings [][]float32 `json:"embeddings"`
}

// decodeOllama reads "embeddings", which Ollama returns in input order.
func decodeOllama(body []byte, n int) ([][]float32, error) {
	var resp ollamaResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("%w: %v (body starts %q)", ErrMalformedResponse, err, bodySnippet(body[:min(len(body), 64)]))
	}
	if len(resp.Embeddings) != n {
		return nil, fmt.Errorf("%w: sent %d texts, got %d embeddings", ErrMalformedResponse, n, len(resp.Embeddings))
	}
	return resp.Embeddings, nil
}

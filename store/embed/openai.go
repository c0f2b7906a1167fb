package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAIConfig configures an embedder for the OpenAI embeddings API or any
// server that speaks it (vLLM, LiteLLM, LocalAI, llama.cpp, TEI, ...).
type OpenAIConfig struct {
	// BaseURL is the server root; requests go to BaseURL + "/v1/embeddings".
	// A trailing "/v1", as OpenAI SDKs spell base URLs, is not doubled.
	// Empty means "https://api.openai.com".
	BaseURL string
	// Model is the model name sent with each request. Required.
	Model string
	// Dim is the length of the model's vectors (1536 for
	// text-embedding-3-small). Required: every returned vector is checked
	// against it, because the store sizes its vector column from it.
	Dim int
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// RequestDimensions sends "dimensions": Dim with each request, for
	// models that can shorten their vectors (OpenAI text-embedding-3-*).
	// Leave it off for servers that reject unknown fields.
	RequestDimensions bool
	// BatchSize is the most texts sent in one request; longer inputs are
	// split into several requests. 0 means DefaultBatchSize.
	BatchSize int
	// Timeout bounds each request, including reading the answer. 0 means
	// DefaultTimeout. The context passed to Embed also applies.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
}

// OpenAI embeds texts with an OpenAI-compatible embeddings endpoint. It is
// safe for concurrent use.
type OpenAI struct {
	h *httpEmbedder
}

// NewOpenAI checks cfg and returns the embedder, named "openai:<Model>".
// It sends nothing until Embed is called. A bad configuration is an error
// wrapping ErrInvalidConfig.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	base := cmpOr(cfg.BaseURL, "https://api.openai.com")
	path := "/v1/embeddings"
	if strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
		path = "/embeddings"
	}
	h, err := newHTTPEmbedder(httpSettings{
		kind: "openai", baseURL: base, path: path, model: cfg.Model,
		dim: cfg.Dim, batchSize: cfg.BatchSize, timeout: cfg.Timeout, client: cfg.HTTPClient,
	})
	if err != nil {
		return nil, err
	}
	h.apiKey = cfg.APIKey
	h.request = func(batch []string) any {
		req := openAIRequest{Model: cfg.Model, Input: batch}
		if cfg.RequestDimensions {
			req.Dimensions = cfg.Dim
		}
		return req
	}
	h.decode = decodeOpenAI
	return &OpenAI{h: h}, nil
}

// Name returns "openai:<Model>".
func (o *OpenAI) Name() string { return o.h.name }

// Dim returns the configured dimension.
func (o *OpenAI) Dim() int { return o.h.dim }

// Embed returns one vector per text, in input order, sending at most
// BatchSize texts per request. It fails as a whole: no partial results.
// OpenAI's own API rejects empty strings (a 400 *StatusError); callers
// that may index empty fields should skip them.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.h.embed(ctx, texts)
}

type openAIRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type openAIResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     *int      `json:"index"`
	} `json:"data"`
}

// decodeOpenAI places each data item at its "index". The API does not
// promise data in input order, so order is only trusted when no item
// carries an index (some compatible servers omit it).
func decodeOpenAI(body []byte, n int) ([][]float32, error) {
	var resp openAIResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("%w: %v (body starts %q)", ErrMalformedResponse, err, bodySnippet(body[:min(len(body), 64)]))
	}
	if len(resp.Data) != n {
		return nil, fmt.Errorf("%w: sent %d texts, got %d embeddings", ErrMalformedResponse, n, len(resp.Data))
	}
	out := make([][]float32, n)
	withIndex := 0
	for _, d := range resp.Data {
		if d.Index != nil {
			withIndex++
		}
	}
	if withIndex != 0 && withIndex != n {
		return nil, fmt.Errorf("%w: %d of %d embeddings have an index", ErrMalformedResponse, withIndex, n)
	}
	for pos, d := range resp.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: embedding index %d is outside 0..%d", ErrMalformedResponse, i, n-1)
		}
		if out[i] != nil {
			return nil, fmt.Errorf("%w: two embeddings have index %d", ErrMalformedResponse, i)
		}
		if d.Embedding == nil {
			return nil, fmt.Errorf("%w: embedding %d has no \"embedding\" array", ErrMalformedResponse, i)
		}
		out[i] = d.Embedding
	}
	return out, nil
}

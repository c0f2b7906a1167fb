package anthropic

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superstep-dev/superstep/models"
)

// Provider is the ls_provider name of this package's models.
const Provider = "anthropic"

// DefaultMaxTokens caps a reply when neither Config.MaxTokens nor the
// call's options do; the API requires a cap.
const DefaultMaxTokens = 4096

// Config configures a Model.
type Config struct {
	// APIKey is the API key; empty reads ANTHROPIC_API_KEY. It is sent as
	// x-api-key and never appears in errors, hooks' responses or events.
	APIKey string
	// BaseURL is the API's base URL; empty reads ANTHROPIC_BASE_URL, else
	// the SDK's default (https://api.anthropic.com/).
	BaseURL string
	// Model is the model's name, e.g. "claude-sonnet-4-5". Required.
	Model string
	// MaxTokens caps a reply when a call does not (0: DefaultMaxTokens).
	MaxTokens int
	// HTTPClient sends the requests; nil is the SDK's default client.
	HTTPClient *http.Client
	// Hooks run before and after every call, with the rendered
	// *anthropic.MessageNewParams in Request.Params.
	Hooks models.Hooks
}

// Model is a chat model on the Anthropic Messages API. It is safe for
// concurrent use.
type Model struct {
	client    anthropic.Client
	model     string
	maxTokens int
	key       string
	hooks     models.Hooks
}

var _ models.ChatModel = (*Model)(nil)

// New returns a Model configured by cfg, with the SDK's retries off: a
// failed call is retried by the node's RetryPolicy, so each retry is a
// TaskRetried event. It fails with models.ErrNoAPIKey when no key is set.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w: set ANTHROPIC_API_KEY or Config.APIKey", models.ErrNoAPIKey)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("anthropic: Config.Model is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	opts := []option.RequestOption{
		// The environment is read above, once; the SDK must not add an
		// auth token or profile of its own.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	return &Model{client: anthropic.NewClient(opts...), model: cfg.Model, maxTokens: cfg.MaxTokens, key: cfg.APIKey, hooks: cfg.Hooks}, nil
}

// Info names the provider and model.
func (m *Model) Info() models.ModelInfo {
	return models.ModelInfo{Provider: Provider, Model: m.model, MaxTokens: m.maxTokens}
}

// Generate sends the conversation and returns the reply.
func (m *Model) Generate(ctx context.Context, messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	return m.call(ctx, messages, opts, nil)
}

// Stream sends the conversation, calls onChunk with each AIMessageChunk
// (text deltas; tool call chunks from input_json_delta; a last chunk with
// usage and the stop reason), and returns the reply, which is what
// Generate returns for the same answer.
func (m *Model) Stream(ctx context.Context, messages []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	if onChunk == nil {
		onChunk = func(models.Message) error { return nil }
	}
	return m.call(ctx, messages, opts, onChunk)
}

func (m *Model) call(ctx context.Context, messages []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	params, err := m.Render(messages, opts)
	if err != nil {
		return models.Message{}, err
	}
	req := models.NewRequest(m.Info(), messages, opts, &params, onChunk != nil)
	return m.hooks.Around(ctx, req, func(ctx context.Context, resp *models.Response) (models.Message, error) {
		p, ok := req.Params.(*anthropic.MessageNewParams)
		if !ok {
			return models.Message{}, fmt.Errorf("anthropic: a BeforeCall hook replaced Request.Params with %T; change the *anthropic.MessageNewParams in place", req.Params)
		}
		extra := models.HeaderOptions(req.Headers, option.WithHeader)
		if onChunk == nil {
			return m.generate(ctx, *p, resp, extra...)
		}
		return m.stream(ctx, *p, resp, onChunk, extra...)
	})
}

// generate makes one non-streamed request.
func (m *Model) generate(ctx context.Context, p anthropic.MessageNewParams, resp *models.Response, extra ...option.RequestOption) (models.Message, error) {
	var httpResp *http.Response
	msg, err := m.client.Messages.New(ctx, p, append(extra, option.WithResponseInto(&httpResp))...)
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("Request-Id")
	}
	if err != nil {
		return models.Message{}, m.providerError(ctx, err, false)
	}
	return Parse(msg, resp.RequestID), nil
}

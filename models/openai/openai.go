package openai

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superstep-dev/superstep/models"
)

// Config configures a Model.
type Config struct {
	// APIKey is the API key; empty reads OPENAI_API_KEY. It is sent as a
	// bearer token and never appears in errors, hooks' responses or
	// events.
	APIKey string
	// BaseURL is the API's base URL, ending in /v1/; empty reads
	// OPENAI_BASE_URL, else https://api.openai.com/v1/. Point it at
	// Ollama (http://localhost:11434/v1/), vLLM or DeepSeek to use them.
	BaseURL string
	// Model is the model's name, e.g. "gpt-5-mini". Required.
	Model string
	// Provider is the ls_provider name; empty is "openai".
	Provider string
	// MaxTokens caps a reply when a call does not (0: no cap sent).
	MaxTokens int
	// LegacyMaxTokens sends the cap as max_tokens instead of
	// max_completion_tokens, for compatible servers that know only the
	// older field.
	LegacyMaxTokens bool
	// HTTPClient sends the requests; nil is the SDK's default client.
	HTTPClient *http.Client
	// Hooks run before and after every call, with the rendered
	// *openai.ChatCompletionNewParams in Request.Params.
	Hooks models.Hooks
}

// Model is a chat model on an OpenAI-compatible Chat Completions API. It
// is safe for concurrent use.
type Model struct {
	client   openai.Client
	cfg      Config
	provider string
}

var _ models.ChatModel = (*Model)(nil)

// New returns a Model configured by cfg, with the SDK's retries off: a
// failed call is retried by the node's RetryPolicy, so each retry is a
// TaskRetried event. It fails with models.ErrNoAPIKey when no key is set
// (servers without keys, such as Ollama, take any non-empty one).
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("openai: %w: set OPENAI_API_KEY or Config.APIKey", models.ErrNoAPIKey)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai: Config.Model is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = os.Getenv("OPENAI_BASE_URL")
	}
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	m := &Model{cfg: cfg, provider: cfg.Provider}
	if m.provider == "" {
		m.provider = "openai"
	}
	m.client = openai.NewClient(opts...)
	return m, nil
}

// Info names the provider and model.
func (m *Model) Info() models.ModelInfo {
	return models.ModelInfo{Provider: m.provider, Model: m.cfg.Model, MaxTokens: m.cfg.MaxTokens}
}

// Generate sends the conversation and returns the reply.
func (m *Model) Generate(ctx context.Context, messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	return m.call(ctx, messages, opts, nil)
}

// Stream sends the conversation with stream_options.include_usage, calls
// onChunk with each AIMessageChunk (content deltas; tool call chunks by
// index; a last chunk with usage and the finish reason), and returns the
// reply, which is what Generate returns for the same answer.
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
	if onChunk != nil {
		params.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	req := models.NewRequest(m.Info(), messages, opts, &params, onChunk != nil)
	return m.cfg.Hooks.Around(ctx, req, func(ctx context.Context, resp *models.Response) (models.Message, error) {
		p, ok := req.Params.(*openai.ChatCompletionNewParams)
		if !ok {
			return models.Message{}, fmt.Errorf("openai: a BeforeCall hook replaced Request.Params with %T; change the *openai.ChatCompletionNewParams in place", req.Params)
		}
		if onChunk == nil {
			return m.generate(ctx, *p, resp)
		}
		return m.stream(ctx, *p, resp, onChunk)
	})
}

func (m *Model) generate(ctx context.Context, p openai.ChatCompletionNewParams, resp *models.Response) (models.Message, error) {
	var httpResp *http.Response
	c, err := m.client.Chat.Completions.New(ctx, p, option.WithResponseInto(&httpResp))
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("X-Request-Id")
	}
	if err != nil {
		return models.Message{}, m.providerError(ctx, err, false, resp.RequestID)
	}
	return Parse(c, m.provider, resp.RequestID), nil
}

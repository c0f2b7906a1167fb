package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

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
	// Organization and Project are sent as the OpenAI-Organization and
	// OpenAI-Project headers. Empty reads OPENAI_ORG_ID and
	// OPENAI_PROJECT_ID, but only when the base URL is OpenAI's own: a
	// compatible server (Ollama, vLLM, a proxy) gets them only when set
	// here.
	Organization string
	Project      string
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
	if isOpenAI(cfg.BaseURL) {
		if cfg.Organization == "" {
			cfg.Organization = os.Getenv("OPENAI_ORG_ID")
		}
		if cfg.Project == "" {
			cfg.Project = os.Getenv("OPENAI_PROJECT_ID")
		}
	}
	// The environment is read above, once: the SDK's own defaults are
	// undone so that it adds no header of its own to requests that go to
	// other servers.
	opts := append(withoutEnvironmentHeaders(),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(0),
	)
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.Organization != "" {
		opts = append(opts, option.WithOrganization(cfg.Organization))
	}
	if cfg.Project != "" {
		opts = append(opts, option.WithProject(cfg.Project))
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

// withoutEnvironmentHeaders undoes the headers openai.NewClient adds from
// the environment (OPENAI_ORG_ID, OPENAI_PROJECT_ID and the names in
// OPENAI_CUSTOM_HEADERS). openai-go v3 has no public
// option.WithoutEnvironmentDefaults (anthropic-sdk-go has; openai-go's is
// internal, for its Azure and Bedrock clients), so the headers are
// deleted instead; options apply after the defaults.
func withoutEnvironmentHeaders() []option.RequestOption {
	opts := []option.RequestOption{option.WithHeaderDel("OpenAI-Organization"), option.WithHeaderDel("OpenAI-Project")}
	for _, line := range strings.Split(os.Getenv("OPENAI_CUSTOM_HEADERS"), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) != "" {
			opts = append(opts, option.WithHeaderDel(strings.TrimSpace(name)))
		}
	}
	return opts
}

// isOpenAI reports whether a base URL is OpenAI's own API (empty is the
// SDK's default, which is).
func isOpenAI(baseURL string) bool {
	if baseURL == "" {
		return true
	}
	u, err := url.Parse(baseURL)
	return err == nil && u.Hostname() == "api.openai.com"
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
		extra := models.HeaderOptions(req.Headers, option.WithHeader)
		if onChunk == nil {
			return m.generate(ctx, *p, resp, extra...)
		}
		return m.stream(ctx, *p, resp, onChunk, extra...)
	})
}

func (m *Model) generate(ctx context.Context, p openai.ChatCompletionNewParams, resp *models.Response, extra ...option.RequestOption) (models.Message, error) {
	var httpResp *http.Response
	c, err := m.client.Chat.Completions.New(ctx, p, append(extra, option.WithResponseInto(&httpResp))...)
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("X-Request-Id")
	}
	if err != nil {
		return models.Message{}, m.providerError(ctx, err, false, resp.RequestID)
	}
	return Parse(c, m.provider, resp.RequestID), nil
}

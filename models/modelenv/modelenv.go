package modelenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/openai"
)

// The environment variables FromEnv reads.
const (
	EnvAnthropicKey  = "ANTHROPIC_API_KEY"
	EnvAnthropicBase = "ANTHROPIC_BASE_URL"
	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBase    = "OPENAI_BASE_URL"
	// EnvModel names the model; empty is the provider's default.
	EnvModel = "SUPERSTEP_MODEL"
)

// Default model names, used when SUPERSTEP_MODEL is empty.
const (
	DefaultAnthropicModel = "claude-sonnet-4-5"
	DefaultOpenAIModel    = "gpt-5-mini"
	// OfflineModel is the offline model's name (its provider is
	// OfflineProvider).
	OfflineModel    = "offline"
	OfflineProvider = "local"
)

// NoKey is the API key sent to an OpenAI-compatible server configured
// by OPENAI_BASE_URL alone: Ollama and vLLM ignore it, and the SDK needs
// one.
const NoKey = "no-key"

// ErrNoModel is returned when OPENAI_BASE_URL points at a server whose
// models cannot be guessed and SUPERSTEP_MODEL is empty.
var ErrNoModel = errors.New("modelenv: no model named")

// Config tunes Load. The zero value reads the process environment and
// gives the offline model no responder.
type Config struct {
	// Getenv reads an environment variable; nil is os.Getenv.
	Getenv func(string) string
	// Respond answers the offline model's requests before its default
	// answers (localprovider.Config.Respond): graphs whose tool loops the
	// default cannot drive give theirs here. Only the offline model uses
	// it.
	Respond func(localprovider.Request) (localprovider.Turn, bool)
	// Hooks are installed on the model, whichever provider it is (the
	// Studio's prompt-cache layer puts its own there).
	Hooks models.Hooks
	// Double configures the offline model's double (its prompt-cache
	// emulation: CacheMinTokens, say); its Respond, when nil, is Respond.
	Double localprovider.Config
}

// FromEnv picks the chat model from the process environment; see the
// package doc. It is Load(Config{}).
func FromEnv() (models.ChatModel, error) { return Load(Config{}) }

// Load picks the chat model from the environment cfg reads:
// ANTHROPIC_API_KEY gives models/anthropic; else OPENAI_API_KEY or
// OPENAI_BASE_URL gives models/openai; else the offline model. The
// model's name is SUPERSTEP_MODEL, else the provider's default. Errors
// name the variables to set, never their values.
func Load(cfg Config) (models.ChatModel, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	name := getenv(EnvModel)
	if key := getenv(EnvAnthropicKey); key != "" {
		m, err := anthropic.New(anthropic.Config{APIKey: key, BaseURL: getenv(EnvAnthropicBase), Model: orDefault(name, DefaultAnthropicModel), Hooks: cfg.Hooks})
		if err != nil {
			return nil, fmt.Errorf("modelenv: %s is set: %w", EnvAnthropicKey, err)
		}
		return m, nil
	}
	key, base := getenv(EnvOpenAIKey), getenv(EnvOpenAIBase)
	if key != "" || base != "" {
		if name == "" && base != "" {
			return nil, fmt.Errorf("%w: %s points at a server whose models we cannot guess; set %s to one it serves", ErrNoModel, EnvOpenAIBase, EnvModel)
		}
		m, err := openai.New(openai.Config{APIKey: orDefault(key, NoKey), BaseURL: base, Model: orDefault(name, DefaultOpenAIModel), Hooks: cfg.Hooks})
		if err != nil {
			return nil, fmt.Errorf("modelenv: %s: %w", EnvOpenAIKey, err)
		}
		return m, nil
	}
	return offline(cfg)
}

// Offline returns the offline model: the local provider double
// (models/localprovider), with respond as its Config.Respond (nil: none),
// served in process behind the Anthropic adapter. Its Info says Offline,
// so models.Call marks its replies and the Studio badges them. Load with
// no provider configured gives the same model, with Config's hooks and
// double settings.
func Offline(respond func(localprovider.Request) (localprovider.Turn, bool)) (models.ChatModel, error) {
	return offline(Config{Respond: respond})
}

func offline(cfg Config) (models.ChatModel, error) {
	dc := cfg.Double
	if dc.Respond == nil {
		dc.Respond = cfg.Respond
	}
	double := localprovider.New(dc)
	m, err := anthropic.New(anthropic.Config{
		// The double wants a key; this one opens nothing.
		APIKey:     "offline",
		BaseURL:    "http://offline.invalid/",
		Model:      OfflineModel,
		HTTPClient: &http.Client{Transport: inProcess{handler: double}},
		Hooks:      cfg.Hooks,
	})
	if err != nil {
		return nil, fmt.Errorf("modelenv: the offline model: %w", err)
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	return &offlineModel{Model: m, prefix: hex.EncodeToString(nonce[:]) + "_"}, nil
}

// offlineModel is the Anthropic adapter on the double, labelled offline.
//
// The double numbers its message and tool call ids from 1
// (msg_local_000001, toolu_local_000001_0), and a new double — the next
// process — starts again, so a thread continued after a restart would
// get ids it already holds: add_messages would replace the old message,
// and the agent would take a new tool call for one already answered.
// Each offline model therefore prefixes the ids with a random nonce of
// its own.
type offlineModel struct {
	*anthropic.Model
	prefix string
}

func (*offlineModel) Info() models.ModelInfo {
	return models.ModelInfo{Provider: OfflineProvider, Model: OfflineModel, Offline: true}
}

func (m *offlineModel) Generate(ctx context.Context, messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	reply, err := m.Model.Generate(ctx, messages, opts)
	return m.unique(reply), err
}

func (m *offlineModel) Stream(ctx context.Context, messages []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	if onChunk != nil {
		inner := onChunk
		onChunk = func(c models.Message) error { return inner(m.unique(c)) }
	}
	reply, err := m.Model.Stream(ctx, messages, opts, onChunk)
	return m.unique(reply), err
}

// unique prefixes the double's ids in a reply or chunk with the nonce.
func (m *offlineModel) unique(msg models.Message) models.Message {
	fix := func(id string) string {
		if strings.Contains(id, "_local_") {
			return strings.Replace(id, "_local_", "_local_"+m.prefix, 1)
		}
		return id
	}
	msg.ID = fix(msg.ID)
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].ID = fix(msg.ToolCalls[i].ID)
	}
	msg.InvalidToolCalls = slices.Clone(msg.InvalidToolCalls)
	for i := range msg.InvalidToolCalls {
		msg.InvalidToolCalls[i].ID = fix(msg.InvalidToolCalls[i].ID)
	}
	msg.ToolCallChunks = slices.Clone(msg.ToolCallChunks)
	for i := range msg.ToolCallChunks {
		msg.ToolCallChunks[i].ID = fix(msg.ToolCallChunks[i].ID)
	}
	return msg
}

// Describe says which model m is, for a start-up line: provider and
// name, and for the offline model what to set to use a real one. It
// holds no key.
func Describe(m models.ChatModel) string {
	info := m.Info()
	if info.Offline {
		return fmt.Sprintf("the offline model (replies are canned; set %s or %s to use a real one)", EnvAnthropicKey, EnvOpenAIKey)
	}
	return info.Provider + " " + info.Model
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

package openai

import (
	"fmt"
	"github.com/superstep-dev/superstep/models"
	"log/slog"
)

// GoString prints the model for %#v without its API key (fmt would
// otherwise print every field, Config.APIKey and the SDK client's options
// included).
func (m Model) GoString() string {
	return fmt.Sprintf("&openai.Model{provider: %q, model: %q, baseURL: %q, key: [redacted]}", m.provider, m.cfg.Model, m.cfg.BaseURL)
}

// String prints the model for %v and %+v without its API key.
func (m Model) String() string {
	return fmt.Sprintf("openai.Model(%s %s)", m.provider, m.cfg.Model)
}

// LogValue logs the model as its provider, name and base URL, never its
// key.
func (m Model) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", m.provider), slog.String("model", m.cfg.Model), slog.String("base_url", m.cfg.BaseURL))
}

var _ slog.LogValuer = Model{}

// GoString prints the configuration for %#v with its API key redacted.
func (c Config) GoString() string {
	return fmt.Sprintf("openai.Config{Model: %q, BaseURL: %q, MaxTokens: %d, APIKey: %s}", c.Model, c.BaseURL, c.MaxTokens, models.KeyLabel(c.APIKey))
}

// String prints the configuration for %v and %+v with its API key
// redacted.
func (c Config) String() string { return c.GoString() }

// LogValue logs the configuration without its API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("model", c.Model), slog.String("base_url", c.BaseURL), slog.String("api_key", models.KeyLabel(c.APIKey)))
}

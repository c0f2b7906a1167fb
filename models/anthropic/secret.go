package anthropic

import (
	"fmt"
	"github.com/superstep-dev/superstep/models"
	"log/slog"
)

// GoString prints the model for %#v without its API key (fmt would
// otherwise print every field, the key and the SDK client's options
// included).
func (m Model) GoString() string {
	return fmt.Sprintf("&anthropic.Model{model: %q, maxTokens: %d, key: [redacted]}", m.model, m.maxTokens)
}

// String prints the model for %v and %+v without its API key.
func (m Model) String() string {
	return fmt.Sprintf("anthropic.Model(%s)", m.model)
}

// LogValue logs the model as its provider and name, never its key.
func (m Model) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", Provider), slog.String("model", m.model))
}

var _ slog.LogValuer = Model{}

// GoString prints the configuration for %#v with its API key redacted.
func (c Config) GoString() string {
	return fmt.Sprintf("anthropic.Config{Model: %q, BaseURL: %q, MaxTokens: %d, APIKey: %s}", c.Model, c.BaseURL, c.MaxTokens, models.KeyLabel(c.APIKey))
}

// String prints the configuration for %v and %+v with its API key
// redacted.
func (c Config) String() string { return c.GoString() }

// LogValue logs the configuration without its API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("model", c.Model), slog.String("base_url", c.BaseURL), slog.String("api_key", models.KeyLabel(c.APIKey)))
}

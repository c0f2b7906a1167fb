package openai

import (
	"fmt"
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

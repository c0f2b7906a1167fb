package openai_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/models/openai"
)

// A Config printed or logged any way shows no API key.
func TestConfigNeverPrintsItsKey(t *testing.T) {
	t.Parallel()
	const key = "sk-openai-secret-123"
	cfg := openai.Config{APIKey: key, Model: "gpt-x"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(&cfg), logged.String()} {
		if strings.Contains(s, key) || !strings.Contains(s, "gpt-x") {
			t.Fatalf("printed %q", s)
		}
	}
}

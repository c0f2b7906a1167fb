package anthropic_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/models/anthropic"
)

// A Config printed or logged any way shows no API key.
func TestConfigNeverPrintsItsKey(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-secret-123"
	cfg := anthropic.Config{APIKey: key, Model: "claude-x"}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprint(&cfg), logged.String()} {
		if strings.Contains(s, key) || !strings.Contains(s, "claude-x") {
			t.Fatalf("printed %q", s)
		}
	}
}

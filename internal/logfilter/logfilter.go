// Package logfilter quiets a chatty library's logs: river logs each
// migration it applies and each job it works at Info, which a Studio
// running many runs (and every test schema) would print.
package logfilter

import (
	"context"
	"log/slog"
)

// Warnings passes on only warnings and errors to h.
func Warnings(h slog.Handler) slog.Handler { return warnings{h} }

type warnings struct{ slog.Handler }

func (h warnings) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.Handler.Enabled(ctx, l)
}

func (h warnings) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnings{h.Handler.WithAttrs(attrs)}
}

func (h warnings) WithGroup(name string) slog.Handler { return warnings{h.Handler.WithGroup(name)} }

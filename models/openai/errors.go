package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/superstep-dev/superstep/models"
)

// providerError turns what the SDK returned into a *models.ProviderError
// (or the context's error when the call was cancelled), keeping none of
// the SDK's values: they hold the request and its API key.
func (m *Model) providerError(ctx context.Context, err error, midstream bool, requestID string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("openai: %w", ctx.Err())
	}
	key := m.cfg.APIKey
	pe := &models.ProviderError{Provider: m.provider, Midstream: midstream, RequestID: requestID}
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr):
		pe.Status, pe.Type, pe.Message = apiErr.StatusCode, apiErr.Type, models.Redact(apiErr.Message, key)
		if apiErr.Response != nil {
			pe.RequestID = apiErr.Response.Header.Get("X-Request-Id")
			pe.RetryDelay = models.ParseRetryAfter(apiErr.Response.Header, time.Now())
			pe.ShouldRetry = models.ShouldRetryHeader(apiErr.Response.Header)
		}
		if pe.Type == "" {
			pe.Type = apiErr.Code
		}
		if apiErr.Code == "insufficient_quota" || apiErr.Type == "insufficient_quota" {
			// A 429 that waiting cannot fix: the account is out of
			// credit. The SDK retries it; we do not.
			no := false
			pe.ShouldRetry = &no
		}
	case errors.As(err, &streamErr):
		// {"error": {...}} in the stream, after the 200.
		var e struct {
			Error struct{ Type, Message, Code string }
		}
		pe.Midstream, pe.Type, pe.Message = true, "server_error", models.Redact(streamErr.Message, key)
		if json.Unmarshal(streamErr.Event.Data, &e) == nil && e.Error.Message != "" {
			pe.Type, pe.Message = e.Error.Type, models.Redact(e.Error.Message, key)
		}
		pe.Status = models.StatusForErrorType(pe.Type)
	default:
		pe.Type, pe.Message = "connection_error", models.Redact(err.Error(), key)
	}
	return pe
}

package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// providerError turns what the SDK returned into a *models.ProviderError
// (or the context's error when the call was cancelled), keeping none of
// the SDK's values: they hold the request and its API key.
func (m *Model) providerError(ctx context.Context, err error, midstream bool) error {
	if ctx.Err() != nil {
		return fmt.Errorf("anthropic: %w", ctx.Err())
	}
	pe := &models.ProviderError{Provider: Provider, Midstream: midstream}
	var apiErr *anthropic.Error
	switch {
	case errors.As(err, &apiErr):
		pe.Status, pe.Type, pe.RequestID = apiErr.StatusCode, string(apiErr.Type()), apiErr.RequestID
		pe.Message = models.Redact(apiErr.Message, m.key)
		if apiErr.Response != nil {
			pe.RetryDelay = models.ParseRetryAfter(apiErr.Response.Header, time.Now())
			pe.ShouldRetry = models.ShouldRetryHeader(apiErr.Response.Header)
		}
		if pe.Status < 400 {
			// An error event after the 200 that started the stream.
			pe.Status, pe.Midstream = models.StatusForErrorType(pe.Type), true
		}
	case midstream:
		// The SDK could not build its error from the event: read it.
		pe.Type, pe.Message = "connection_error", models.Redact(err.Error(), m.key)
		if _, body, ok := strings.Cut(err.Error(), "received error while streaming: "); ok {
			var e struct {
				Error struct{ Type, Message string }
			}
			if json.Unmarshal([]byte(body), &e) == nil && e.Error.Type != "" {
				pe.Type, pe.Message = e.Error.Type, models.Redact(e.Error.Message, m.key)
				pe.Status = models.StatusForErrorType(pe.Type)
			}
		}
	default:
		pe.Type, pe.Message = "connection_error", models.Redact(err.Error(), m.key)
	}
	return pe
}

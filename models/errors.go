package models

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNoAPIKey is returned by a provider's constructor when no API key is
// configured (neither in its Config nor in the environment).
var ErrNoAPIKey = errors.New("models: no API key configured")

// ProviderError is an error answered by a model provider: an HTTP error
// status, or an error event in the middle of a streamed reply. It carries
// no SDK value (those hold the request, and so the API key): only the
// provider's own words.
//
// Its HTTPStatus and RetryAfter methods are what the engine's
// DefaultRetryOn reads. Retryable is the SDKs' own policy, which we keep:
// the provider's x-should-retry header when it sent one, else a lost
// connection, 408, 409, 429 and 5xx (529 "overloaded" included) are
// retried by a node's RetryPolicy, after RetryAfter when the provider said
// how long to wait. Providers send their requests with the SDK's own
// retries off, so every retry is the engine's and shows as a TaskRetried
// event.
type ProviderError struct {
	// Provider is "anthropic", "openai", ...
	Provider string
	// Status is the HTTP status. For an error event in a stream (which
	// arrives after a 200) it is the status the error's type stands for
	// (overloaded_error: 529, rate_limit_error: 429, api_error: 500, ...);
	// 0 when the connection failed before any answer.
	Status int
	// Type is the provider's error type (overloaded_error,
	// rate_limit_error, server_error, connection_error, ...).
	Type string
	// Message is the provider's message, with the API key (if the
	// provider ever echoed it) redacted.
	Message string
	// RequestID is the provider's request id, for its support.
	RequestID string
	// RetryDelay is the wait the provider asked for (retry-after-ms or
	// retry-after); 0 when it asked for none. (It is not named RetryAfter
	// because that is the method the engine reads.)
	RetryDelay time.Duration
	// Midstream is true when the error ended a streamed reply that had
	// begun: what was streamed so far is not part of any reply.
	Midstream bool
	// ShouldRetry is the provider's own word on retrying, when it gave
	// one: the x-should-retry: true|false header, or an error no retry
	// can fix although its status says otherwise (OpenAI's 429
	// insufficient_quota: the account is out of credit). nil: the status
	// decides.
	ShouldRetry *bool
}

// Error says who answered what, with the request id.
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Midstream {
		b.WriteString("stream ended by an error: ")
	}
	if e.Status != 0 {
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteString(" ")
	}
	b.WriteString(e.Type)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RequestID != "" {
		b.WriteString(" (request ")
		b.WriteString(e.RequestID)
		b.WriteString(")")
	}
	if e.RetryDelay > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryDelay)
	}
	return b.String()
}

// Retryable reports whether sending the same request again may succeed,
// as the SDKs' own retry policy decides: ShouldRetry when set, else true
// for a connection lost before any status (0), 408, 409, 429 and 5xx.
func (e *ProviderError) Retryable() bool {
	if e.ShouldRetry != nil {
		return *e.ShouldRetry
	}
	switch s := e.Status; {
	case s == 0, s == http.StatusRequestTimeout, s == http.StatusConflict, s == http.StatusTooManyRequests, s >= 500:
		return true
	}
	return false
}

// HTTPStatus is the status the engine's DefaultRetryOn classifies the
// error by (it retries 5xx, 408 and 429, no other 4xx, and reads nothing
// else of an error). It is Status when that class agrees with Retryable;
// when it does not (a 409, an x-should-retry header, insufficient_quota)
// it is a stand-in of Retryable's class: 503 for retry, 400 for not.
// Status keeps what the provider answered.
func (e *ProviderError) HTTPStatus() int {
	s := e.Status
	retried := s == 0 || s == http.StatusRequestTimeout || s == http.StatusTooManyRequests || s >= 500
	switch r := e.Retryable(); {
	case r == retried:
		return s
	case r:
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadRequest
	}
}

// ShouldRetryHeader reads the x-should-retry header of an error answer:
// the provider's override of the status's retry class, nil when absent.
func ShouldRetryHeader(h http.Header) *bool {
	v := h.Get("X-Should-Retry")
	if v != "true" && v != "false" {
		return nil
	}
	retry := v == "true"
	return &retry
}

// RetryAfter is the wait the provider asked for before the next attempt;
// the engine's retry policy waits that long (capped by its MaxInterval)
// instead of its backoff.
func (e *ProviderError) RetryAfter() time.Duration { return e.RetryDelay }

// StatusForErrorType is the HTTP status a provider error type stands for,
// used for error events in a stream, which arrive after a 200. An unknown
// type is 500, so the error is retried as a server error.
func StatusForErrorType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error", "rate_limit_exceeded", "tokens_exceeded":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

// ParseRetryAfter reads the wait a provider asked for from an error
// answer's headers: retry-after-ms, else retry-after in seconds or as an
// HTTP date. It returns 0 when there is none (or it is in the past).
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Redact replaces every occurrence of secret in s with "[redacted]";
// providers pass everything a server said through it before it goes into
// an error.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// KeyLabel is how an API key is printed: "[redacted]", or `""` when there
// is none (so a missing key is still visible in a configuration dump).
func KeyLabel(key string) string {
	if key == "" {
		return `""`
	}
	return "[redacted]"
}

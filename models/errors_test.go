package models_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/models"
)

// The engine retries a provider error as the SDKs would: by status, with
// 409 retried and the provider's x-should-retry word overriding.
func TestProviderErrorRetryClass(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		status int
		should *bool
		retry  bool
	}{
		{0, nil, true}, {400, nil, false}, {401, nil, false}, {408, nil, true}, {409, nil, true},
		{429, nil, true}, {500, nil, true}, {529, nil, true},
		{400, &yes, true}, {429, &no, false}, {503, &no, false}, {0, &no, false}, {500, &yes, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d/%v", tc.status, tc.should != nil && *tc.should), func(t *testing.T) {
			t.Parallel()
			err := fmt.Errorf("node: %w", &models.ProviderError{Provider: "p", Status: tc.status, ShouldRetry: tc.should})
			if got := engine.DefaultRetryOn(err); got != tc.retry {
				t.Fatalf("DefaultRetryOn %v, want %v", got, tc.retry)
			}
		})
	}
}

func TestShouldRetryHeader(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"true": "true", "false": "false", "": "<nil>", "maybe": "<nil>"} {
		h := http.Header{}
		if v != "" {
			h.Set("x-should-retry", v)
		}
		got := "<nil>"
		if p := models.ShouldRetryHeader(h); p != nil {
			got = fmt.Sprint(*p)
		}
		if got != want {
			t.Fatalf("x-should-retry %q read as %s, want %s", v, got, want)
		}
	}
}

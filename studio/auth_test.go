package studio_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/superstep-dev/superstep/studio"
)

// With AuthToken set, the assembled Studio refuses anonymous requests and
// lets the bearer in.
func TestOpenWithAuthToken(t *testing.T) {
	t.Parallel()
	s, err := studio.Open(context.Background(), studio.Config{AuthToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer nope", http.StatusUnauthorized}, {"Bearer tok", http.StatusOK}} {
		req := httptest.NewRequest("GET", "/graphs", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, rec.Code, tc.want)
		}
	}
}

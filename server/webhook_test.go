package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/server"
)

func TestWebhookGetsTheEndedRunAfterARetry(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls int
	got := make(chan map[string]any, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		got <- m
	}))
	t.Cleanup(hook.Close)
	c := newServerWith(t, nil, func(cfg *server.Config) { cfg.WebhookHosts = []string{"127.0.0.1"} })
	thread := uuid.NewString()
	run := c.json("POST", "/threads/"+thread+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "webhook": hook.URL + "/done"}, 200)
	m := <-got
	if m["run_id"] != run["run_id"] || m["status"] != "success" || fmt.Sprint(m["values"]) != "map[log:[a b c]]" {
		t.Fatalf("webhook payload %v: want the run, success, and the final values", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 {
		t.Fatalf("the webhook was called %d times, want 2 (a 503, then the delivery)", calls)
	}
}

func TestWebhookHostsAreAllowListed(t *testing.T) {
	t.Parallel()
	c := newServerWith(t, nil, func(cfg *server.Config) { cfg.WebhookHosts = []string{"hooks.example.com", "*.corp.example"} })
	none := newServer(t, nil)
	for _, tc := range []struct {
		c    *client
		hook string
		want string
	}{
		{c, "http://169.254.169.254/latest", "not one this server may call"},
		{c, "ftp://hooks.example.com/x", "http or https"},
		{c, "https://user:pw@hooks.example.com/x", "no credentials"},
		{none, "https://hooks.example.com/x", "not configured"},
	} {
		code, _, b := tc.c.do("POST", "/threads/"+uuid.NewString()+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "webhook": tc.hook})
		if code != 422 || !strings.Contains(string(b), tc.want) || strings.Contains(string(b), "pw") {
			t.Errorf("webhook %s = %d %s, want 422 saying %q", tc.hook, code, b, tc.want)
		}
	}
	for _, ok := range []string{"https://hooks.example.com/x", "http://a.corp.example/x"} {
		if code, _, b := c.do("POST", "/threads/"+uuid.NewString()+"/runs", map[string]any{"assistant_id": "linear", "input": map[string]any{}, "if_not_exists": "create", "webhook": ok}); code != 200 {
			t.Errorf("allowed webhook %s = %d %s", ok, code, b)
		}
	}
}

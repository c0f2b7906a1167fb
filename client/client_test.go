package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/superstep-dev/superstep/client"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/server"
	"github.com/superstep-dev/superstep/store"
)

// serve starts a real API server over st (nil: no store) and returns its
// URL.
func serve(t *testing.T, st store.Store, token string) string {
	t.Helper()
	m, err := runs.NewManager(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	api, err := server.New(server.Config{Runs: m, Store: st, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

func memStore(t *testing.T, opts store.Options) store.Store {
	t.Helper()
	st, err := store.NewMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewBaseURL(t *testing.T) {
	t.Parallel()
	url := serve(t, nil, "")
	c := newClient(t, url+"/")
	if c.BaseURL() != url {
		t.Errorf("BaseURL %q, want %q without the trailing /", c.BaseURL(), url)
	}
	if err := c.Ok(context.Background()); err != nil {
		t.Errorf("Ok through a base URL with a trailing /: %v", err)
	}
	for _, bad := range []string{"", "localhost:8123", "ftp://host", "http://", "http://host/?a=1"} {
		if _, err := client.New(bad); err == nil {
			t.Errorf("New(%q) accepted a base URL requests cannot use", bad)
		}
	}
}

func TestOkAndInfo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, serve(t, memStore(t, store.Options{}), ""))
	if err := c.Ok(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version != server.Version || !info.Flags["store"] || !info.Flags["crons"] || info.Metadata["server"] != "superstep" {
		t.Errorf("Info %+v, want version %s, store on, crons on, server superstep", info, server.Version)
	}
	noStore, err := newClient(t, serve(t, nil, "")).Info(ctx)
	if err != nil || noStore.Flags["store"] {
		t.Errorf("Info of a server without a store: %+v, %v", noStore, err)
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := serve(t, nil, "s3cret-token")

	anon := newClient(t, url)
	if err := anon.Ok(ctx); err != nil {
		t.Errorf("Ok needs no key, got %v", err)
	}
	_, err := anon.Info(ctx)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || !strings.Contains(e.Detail, "missing API key") {
		t.Fatalf("Info without a key: %v, want a 401 *client.Error", err)
	}

	_, err = newClient(t, url, client.WithAPIKey("wrong")).Info(ctx)
	if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Info with a wrong key: %v", err)
	}
	if _, err := newClient(t, url, client.WithAPIKey("s3cret-token")).Info(ctx); err != nil {
		t.Errorf("Info with the key: %v", err)
	}
}

// recorder is a transport that records the requests it forwards.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(req.Context()))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func TestWithHTTPClient(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	c := newClient(t, serve(t, nil, "k"), client.WithHTTPClient(&http.Client{Transport: rec}), client.WithAPIKey("k"))
	if _, err := c.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 1 || rec.reqs[0].URL.Path != "/info" || rec.reqs[0].Header.Get("X-Api-Key") != "k" {
		t.Errorf("requests through the given client: %v", rec.reqs)
	}
}

func TestErrorFromNonJSONBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream proxy says no", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	err := newClient(t, srv.URL).Ok(context.Background())
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Detail != "upstream proxy says no" {
		t.Errorf("got %v, want a 502 *client.Error with the body as detail", err)
	}
}

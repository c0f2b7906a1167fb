package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples/cachedlookup"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/runs"
)

// setupCache serves the Studio over the cached-lookup example, whose
// lookup node caches into c.
func setupCache(t testing.TB) (*fixture, *cache.Memory) {
	t.Helper()
	c := cache.NewMemory(nil)
	g, err := cachedlookup.New(cachedlookup.Options{Cache: c, Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runs.NewManager(map[string]engine.Compiled{"cached-lookup": g})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	handlers.Routes{Runs: m, Cache: c}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(func() {
		srv.Close()
		m.Close()
		_ = c.Close()
	})
	return &fixture{srv: srv, runs: m}, c
}

// lookupNamespace runs the graph once and returns the namespace its
// cached lookup landed in.
func lookupNamespace(t *testing.T, f *fixture, c cache.Cache) string {
	t.Helper()
	th, err := f.runs.Start(context.Background(), "cached-lookup", "", cachedlookup.Input("EUR/USD", 10), runs.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if th = f.wait(t, th.ID); th.Status != runs.StatusIdle {
		t.Fatalf("run ended %s: %s", th.Status, th.Error)
	}
	infos, err := c.List(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("cache holds %d entries after one run, want 1", len(infos))
	}
	return infos[0].Key.Namespace
}

func TestCachePageListsEntriesPerNode(t *testing.T) {
	t.Parallel()
	f, c := setupCache(t)
	if res := f.get(t, "/cache"); res.code != http.StatusOK || !strings.Contains(res.body, `id="cache-empty"`) {
		t.Fatalf("empty cache page: %d, empty notice shown: %v", res.code, strings.Contains(res.body, `id="cache-empty"`))
	}
	ns := lookupNamespace(t, f, c)
	res := f.get(t, "/cache")
	if res.code != http.StatusOK {
		t.Fatalf("GET /cache = %d", res.code)
	}
	for _, want := range []string{"<code>" + cachedlookup.NodeLookupRate + "</code>", `value="` + ns + `"`, "1 entries", `class="cache-entry"`} {
		if !strings.Contains(res.body, want) {
			t.Errorf("cache page lacks %q", want)
		}
	}
	if strings.Contains(res.body, "no expiry") {
		t.Error("the lookup entry has a TTL, but the page says no expiry")
	}
	if strings.Contains(res.body, "<code>"+cachedlookup.NodeQuote+"</code>") {
		t.Error("the uncached quote node is listed")
	}
}

func TestClearCacheRemovesOneNode(t *testing.T) {
	t.Parallel()
	f, c := setupCache(t)
	ns := lookupNamespace(t, f, c)
	other := "__pregel_ns_writes|x|other"
	if err := c.Set(context.Background(), []cache.Entry{{Key: cache.Key{Namespace: other, Key: "k"}, Value: []byte("{}")}}); err != nil {
		t.Fatal(err)
	}
	res := f.post(t, "/cache/clear", url.Values{"namespace": {ns}})
	if res.code != http.StatusSeeOther || !strings.HasPrefix(res.location, "/cache") {
		t.Fatalf("clear = %d to %q, want 303 to /cache", res.code, res.location)
	}
	if got, _ := c.List(context.Background(), ns, 0); len(got) != 0 {
		t.Errorf("cleared namespace still holds %d entries", len(got))
	}
	if got, _ := c.List(context.Background(), other, 0); len(got) != 1 {
		t.Errorf("another node's entries went too: %d left, want 1", len(got))
	}
	page := f.get(t, res.location)
	if !strings.Contains(page.body, `id="cache-cleared"`) || strings.Contains(page.body, `value="`+ns+`"`) {
		t.Errorf("page after clear: notice shown %v, cleared node still listed %v",
			strings.Contains(page.body, `id="cache-cleared"`), strings.Contains(page.body, `value="`+ns+`"`))
	}
}

func TestClearCacheRefusesBadInput(t *testing.T) {
	t.Parallel()
	f, c := setupCache(t)
	ns := lookupNamespace(t, f, c)
	cases := []struct {
		name string
		form url.Values
		want string
	}{
		{"missing", url.Values{}, "no namespace given"},
		{"empty", url.Values{"namespace": {""}}, "no namespace given"},
		{"nul byte", url.Values{"namespace": {"a\x00b"}}, "contains a NUL byte"},
		{"bad utf-8", url.Values{"namespace": {"\xff"}}, "not valid UTF-8"},
		{"unknown", url.Values{"namespace": {"__pregel_ns_writes|nope|lookup"}}, "nothing is cached under"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := f.post(t, "/cache/clear", tc.form)
			if res.code != http.StatusBadRequest || !strings.Contains(res.body, tc.want) {
				t.Errorf("clear %v = %d, want 400 saying %q; body has it: %v", tc.form, res.code, tc.want, strings.Contains(res.body, tc.want))
			}
		})
	}
	if got, _ := c.List(context.Background(), ns, 0); len(got) != 1 {
		t.Errorf("refused clears removed entries: %d left, want 1", len(got))
	}
}

func TestCachePagesAbsentWithoutACache(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if res := f.get(t, "/cache"); res.code != http.StatusNotFound {
		t.Errorf("GET /cache without a cache = %d, want 404", res.code)
	}
}

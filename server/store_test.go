package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/server"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/storetest"
)

// storeServer is an API over a memory store with a word embedder and a
// manual clock, served over HTTP.
type storeServer struct {
	t     *testing.T
	url   string
	clock *storetest.Clock
}

func newStoreServer(t *testing.T, index bool) *storeServer {
	t.Helper()
	clock := storetest.NewClock()
	opts := store.Options{Now: clock.Now}
	if index {
		opts.Index = &store.IndexConfig{Embedder: storetest.NewWordEmbedder()}
	}
	st, err := store.NewMemory(opts)
	if err != nil {
		t.Fatal(err)
	}
	return serveStore(t, st, clock)
}

func serveStore(t *testing.T, st store.Store, clock *storetest.Clock) *storeServer {
	t.Helper()
	m, err := runs.NewManager(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	api, err := server.New(server.Config{Runs: m, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	return &storeServer{t: t, url: srv.URL, clock: clock}
}

type storeAnswer struct {
	code   int
	header http.Header
	body   string
}

// detail is the answer's {"detail": ...}, failing the test without one.
func (a storeAnswer) detail(t *testing.T) string {
	t.Helper()
	var e struct {
		Detail *string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(a.body), &e); err != nil || e.Detail == nil {
		t.Fatalf("want a {\"detail\"} body, got %d %q", a.code, a.body)
	}
	return *e.Detail
}

// call sends body (JSON, as contentType when set) and returns the answer.
func (s *storeServer) call(method, path, contentType, body string) storeAnswer {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "*/*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return storeAnswer{resp.StatusCode, resp.Header, string(b)}
}

func (s *storeServer) json(method, path, body string) storeAnswer {
	s.t.Helper()
	return s.call(method, path, "application/json", body)
}

// must sends the call and fails the test unless the status is want.
func (s *storeServer) must(want int, method, path, body string) storeAnswer {
	s.t.Helper()
	a := s.json(method, path, body)
	if a.code != want {
		s.t.Fatalf("%s %s %s: got %d %s, want %d", method, path, body, a.code, a.body, want)
	}
	return a
}

func (s *storeServer) put(ns, key, value string) {
	s.t.Helper()
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", fmt.Sprintf(`{"namespace":%s,"key":%q,"value":%s}`, ns, key, value))
}

// searchKeys runs a search and returns the items' keys in order.
func (s *storeServer) searchKeys(body string) []string {
	s.t.Helper()
	var out struct {
		Items []struct {
			Key   string   `json:"key"`
			Score *float64 `json:"score"`
		} `json:"items"`
	}
	a := s.must(http.StatusOK, http.MethodPost, "/store/items/search", body)
	if err := json.Unmarshal([]byte(a.body), &out); err != nil || out.Items == nil {
		s.t.Fatalf("search %s: want {\"items\": [...]}, got %s", body, a.body)
	}
	keys := []string{}
	for _, it := range out.Items {
		keys = append(keys, it.Key)
	}
	return keys
}

func (s *storeServer) namespaces(body string) [][]string {
	s.t.Helper()
	var out struct {
		Namespaces [][]string `json:"namespaces"`
	}
	a := s.must(http.StatusOK, http.MethodPost, "/store/namespaces", body)
	if err := json.Unmarshal([]byte(a.body), &out); err != nil || out.Namespaces == nil {
		s.t.Fatalf("namespaces %s: want {\"namespaces\": [...]}, got %s", body, a.body)
	}
	return out.Namespaces
}

func TestStoreItemLifecycle(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	put := s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["users","u1"],"key":"prefs","value":{"theme":"dark","n":1}}`)
	if put.body != "" {
		t.Errorf("PUT answered 204 with a body %q", put.body)
	}
	created := s.clock.Now()
	s.clock.Advance(time.Minute)
	s.put(`["users","u1"]`, "prefs", `{"theme":"light"}`)

	got := s.must(http.StatusOK, http.MethodGet, "/store/items?namespace=users.u1&key=prefs", "")
	if ct := got.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(got.body), &raw); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"created_at", "key", "namespace", "updated_at", "value"}; !slices.Equal(keys, want) {
		t.Errorf("item fields %v, want %v (no score outside search)", keys, want)
	}
	if !slices.Equal(toStrings(raw["namespace"]), []string{"users", "u1"}) || raw["key"] != "prefs" {
		t.Errorf("item names %v %v", raw["namespace"], raw["key"])
	}
	if v, _ := raw["value"].(map[string]any); v["theme"] != "light" || len(v) != 1 {
		t.Errorf("value %v, want the second put's {theme: light}", raw["value"])
	}
	for field, want := range map[string]time.Time{"created_at": created, "updated_at": created.Add(time.Minute)} {
		at, err := time.Parse(time.RFC3339, raw[field].(string))
		if err != nil || !at.Equal(want) {
			t.Errorf("%s %v (%v), want RFC3339 %v", field, raw[field], err, want)
		}
	}

	del := s.must(http.StatusNoContent, http.MethodDelete, "/store/items", `{"namespace":["users","u1"],"key":"prefs"}`)
	if del.body != "" {
		t.Errorf("DELETE answered 204 with a body %q", del.body)
	}
	// Deleting again is not an error: a retried DELETE must succeed.
	s.must(http.StatusNoContent, http.MethodDelete, "/store/items", `{"namespace":["users","u1"],"key":"prefs"}`)
	miss := s.must(http.StatusOK, http.MethodGet, "/store/items?namespace=users.u1&key=prefs", "")
	if miss.body != "null" || miss.header.Get("Content-Type") != "application/json" {
		t.Errorf("GET after delete: %q (%s), want JSON null", miss.body, miss.header.Get("Content-Type"))
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestStoreTextPlainBodies(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	// LangGraph Studio sends JSON as text/plain to avoid a CORS preflight.
	for _, ct := range []string{"text/plain;charset=UTF-8", ""} {
		a := s.call(http.MethodPut, "/store/items", ct, `{"namespace":["a"],"key":"k","value":{"x":1}}`)
		if a.code != http.StatusNoContent {
			t.Fatalf("PUT as %q: %d %s", ct, a.code, a.body)
		}
	}
	a := s.call(http.MethodPost, "/store/items/search", "text/plain", `{"namespace_prefix":["a"]}`)
	if a.code != http.StatusOK || !strings.Contains(a.body, `"key":"k"`) {
		t.Errorf("search as text/plain: %d %s", a.code, a.body)
	}
	a = s.call(http.MethodPost, "/store/namespaces", "text/plain", `{}`)
	if a.code != http.StatusOK || a.body != `{"namespaces":[["a"]]}` {
		t.Errorf("namespaces as text/plain: %d %s", a.code, a.body)
	}
	a = s.call(http.MethodDelete, "/store/items", "text/plain", `{"namespace":["a"],"key":"k"}`)
	if a.code != http.StatusNoContent {
		t.Errorf("DELETE as text/plain: %d %s", a.code, a.body)
	}
	if a := s.call(http.MethodPut, "/store/items", "application/x-www-form-urlencoded", "namespace=a"); a.code != http.StatusUnsupportedMediaType {
		t.Errorf("PUT as a form: %d %s, want 415", a.code, a.body)
	}
}

// TestStoreValidation checks that every route answers bad input with 422
// and a detail naming the field and what was wrong.
func TestStoreValidation(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	for _, tc := range []struct {
		name, method, path, body string
		// want are the detail's expected parts, the field name first.
		want []string
	}{
		{"put dot in label", "PUT", "/store/items", `{"namespace":["users","a.b"],"key":"k","value":{}}`, []string{"namespace: ", `label 1 ("a.b") contains "."`}},
		{"put empty label", "PUT", "/store/items", `{"namespace":["users",""],"key":"k","value":{}}`, []string{"namespace: ", "label 1 is empty"}},
		{"put no namespace", "PUT", "/store/items", `{"key":"k","value":{}}`, []string{"namespace: ", "at least one label"}},
		{"put reserved root", "PUT", "/store/items", `{"namespace":["langgraph"],"key":"k","value":{}}`, []string{"namespace: ", "reserved"}},
		{"put namespace string", "PUT", "/store/items", `{"namespace":"users.u1","key":"k","value":{}}`, []string{"namespace: ", "want an array"}},
		{"put empty key", "PUT", "/store/items", `{"namespace":["a"],"key":"","value":{}}`, []string{"key: ", "empty"}},
		{"put no value", "PUT", "/store/items", `{"namespace":["a"],"key":"k"}`, []string{"value: ", "required"}},
		{"put array value", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":[1]}`, []string{"value: ", "want an object, got an array"}},
		{"put NUL in value", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{"s":"a\u0000b"}}`, []string{"value: ", "NUL"}},
		{"put ttl zero", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"ttl":0}`, []string{"ttl: ", "above 0"}},
		{"put ttl negative", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"ttl":-5}`, []string{"ttl: ", "above 0"}},
		{"put ttl string", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"ttl":"5"}`, []string{"ttl: ", "got a string"}},
		{"put ttl huge", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"ttl":1e12}`, []string{"ttl: ", "at most"}},
		{"put index true", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"index":true}`, []string{"index: ", "false for none"}},
		{"put index string", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"index":"text"}`, []string{"index: ", "got a string"}},
		{"put index bad path", "PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"index":["text","tags["]}`, []string{"index[1]: "}},
		{"put malformed", "PUT", "/store/items", `{"namespace":["a"],`, []string{"body: "}},
		{"put duplicate key", "PUT", "/store/items", `{"namespace":["a"],"key":"k","key":"j","value":{}}`, []string{"body: "}},
		{"get no namespace", "GET", "/store/items?key=k", "", []string{"namespace: ", "required"}},
		{"get empty label", "GET", "/store/items?namespace=a..b&key=k", "", []string{"namespace: ", "label 1 is empty"}},
		{"get trailing dot", "GET", "/store/items?namespace=a.&key=k", "", []string{"namespace: ", "label 1 is empty"}},
		{"get no key", "GET", "/store/items?namespace=a", "", []string{"key: ", "empty"}},
		{"get bad refresh", "GET", "/store/items?namespace=a&key=k&refresh_ttl=maybe", "", []string{"refresh_ttl: ", `"maybe"`}},
		{"delete no body", "DELETE", "/store/items", "", []string{"body: ", "empty"}},
		{"delete dot in label", "DELETE", "/store/items", `{"namespace":["a.b"],"key":"k"}`, []string{"namespace: ", `contains "."`}},
		{"delete no key", "DELETE", "/store/items", `{"namespace":["a"]}`, []string{"key: "}},
		{"search dot in prefix", "POST", "/store/items/search", `{"namespace_prefix":["a.b"]}`, []string{"namespace_prefix: ", `contains "."`}},
		{"search empty label", "POST", "/store/items/search", `{"namespace_prefix":["a",""]}`, []string{"namespace_prefix: ", "label 1 is empty"}},
		{"search filter operator at root", "POST", "/store/items/search", `{"filter":{"$eq":1}}`, []string{"filter: ", `operator "$eq"`}},
		{"search filter unknown operator", "POST", "/store/items/search", `{"filter":{"age":{"$near":1}}}`, []string{"filter: ", "$near"}},
		{"search filter ordering a bool", "POST", "/store/items/search", `{"filter":{"age":{"$gt":true}}}`, []string{"filter: ", "age"}},
		{"search filter not an object", "POST", "/store/items/search", `{"filter":"age>3"}`, []string{"filter: ", "want an object, got a string"}},
		{"search limit zero", "POST", "/store/items/search", `{"limit":0}`, []string{"limit: ", "outside 1..10000"}},
		{"search limit fraction", "POST", "/store/items/search", `{"limit":2.5}`, []string{"limit: "}},
		{"search offset negative", "POST", "/store/items/search", `{"offset":-1}`, []string{"offset: ", "outside 0.."}},
		{"search query without embedder", "POST", "/store/items/search", `{"query":"dark theme"}`, []string{"query: ", "no embedder"}},
		{"namespaces dot in prefix", "POST", "/store/namespaces", `{"prefix":["a.b"]}`, []string{"prefix: ", `contains "."`}},
		{"namespaces empty suffix label", "POST", "/store/namespaces", `{"suffix":["a",""]}`, []string{"suffix: label 1 is empty"}},
		{"namespaces max depth zero", "POST", "/store/namespaces", `{"max_depth":0}`, []string{"max_depth: "}},
		{"namespaces limit too big", "POST", "/store/namespaces", `{"limit":10001}`, []string{"limit: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := s.json(tc.method, tc.path, tc.body)
			if a.code != http.StatusUnprocessableEntity {
				t.Fatalf("got %d %s, want 422", a.code, a.body)
			}
			d := a.detail(t)
			if !strings.HasPrefix(d, tc.want[0]) {
				t.Errorf("detail %q does not start with the field %q", d, tc.want[0])
			}
			for _, w := range tc.want[1:] {
				if !strings.Contains(d, w) {
					t.Errorf("detail %q does not say %q", d, w)
				}
			}
		})
	}
	// Nothing refused was stored.
	if got := s.namespaces(`{}`); len(got) != 0 {
		t.Errorf("refused puts stored namespaces %v", got)
	}
}

func TestStoreTTL(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["a"],"key":"kept","value":{},"ttl":1}`)
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["a"],"key":"lapsed","value":{},"ttl":1}`)
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["a"],"key":"forever","value":{},"ttl":null}`)
	s.clock.Advance(40 * time.Second)
	s.must(http.StatusOK, http.MethodGet, "/store/items?namespace=a&key=kept&refresh_ttl=true", "")
	s.must(http.StatusOK, http.MethodGet, "/store/items?namespace=a&key=lapsed&refresh_ttl=false", "")
	s.clock.Advance(40 * time.Second)
	for key, present := range map[string]bool{"kept": true, "lapsed": false, "forever": true} {
		a := s.must(http.StatusOK, http.MethodGet, "/store/items?namespace=a&key="+key, "")
		if (a.body != "null") != present {
			t.Errorf("%s 80 s after a put with ttl 1: %s", key, a.body)
		}
	}
}

func TestStoreSearchPagination(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	for i := range 5 {
		s.put(`["docs","d"]`, fmt.Sprintf("k%d", i), fmt.Sprintf(`{"n":%d,"kind":"%s"}`, i, []string{"even", "odd"}[i%2]))
		s.clock.Advance(time.Second)
	}
	s.put(`["other"]`, "x", `{"n":9}`)
	var pages [][]string
	for off := 0; off < 6; off += 2 {
		pages = append(pages, s.searchKeys(fmt.Sprintf(`{"namespace_prefix":["docs"],"limit":2,"offset":%d}`, off)))
	}
	// Newest first without a query, a page at a time, nothing twice.
	want := [][]string{{"k4", "k3"}, {"k2", "k1"}, {"k0"}}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Errorf("pages %v, want %v", pages, want)
	}
	if got := s.searchKeys(`{"namespace_prefix":["docs"],"filter":{"kind":"even","n":{"$gte":1}}}`); !slices.Equal(got, []string{"k4", "k2"}) {
		t.Errorf("filtered %v, want [k4 k2]", got)
	}
	if got := s.searchKeys(`{"namespace_prefix":["docs"],"offset":10}`); len(got) != 0 {
		t.Errorf("past the end %v, want []", got)
	}
	// The default page is 10, over every namespace.
	if got := s.searchKeys(`{}`); len(got) != 6 {
		t.Errorf("search with no body fields %v, want all 6 items", got)
	}
	// Without a query the score is there, and null.
	a := s.must(http.StatusOK, http.MethodPost, "/store/items/search", `{"namespace_prefix":["other"]}`)
	if !strings.Contains(a.body, `"score":null`) {
		t.Errorf("search without query: %s, want score null", a.body)
	}
}

func TestStoreSearchQueryRanksByScore(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, true)
	s.put(`["notes"]`, "both", `{"text":"dark theme"}`)
	s.put(`["notes"]`, "one", `{"text":"dark chocolate cake"}`)
	s.put(`["notes"]`, "none", `{"text":"garden tools"}`)
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["notes"],"key":"unindexed","value":{"text":"dark theme"},"index":false}`)
	s.must(http.StatusNoContent, http.MethodPut, "/store/items", `{"namespace":["notes"],"key":"titled","value":{"text":"dark theme","title":"gardening"},"index":["title"]}`)
	a := s.must(http.StatusOK, http.MethodPost, "/store/items/search", `{"namespace_prefix":["notes"],"query":"dark theme"}`)
	var out struct {
		Items []struct {
			Key   string   `json:"key"`
			Score *float64 `json:"score"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(a.body), &out); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, it := range out.Items {
		keys = append(keys, it.Key)
		if it.Score == nil {
			t.Fatalf("item %s has no score: %s", it.Key, a.body)
		}
		if i > 0 && *it.Score > *out.Items[i-1].Score {
			t.Errorf("scores not descending: %s", a.body)
		}
	}
	// An item put with index false has no vectors, so a query never
	// finds it; one whose indexed title shares no word with the query
	// scores 0, below every item that does.
	if len(keys) != 4 || keys[0] != "both" || keys[1] != "one" || slices.Contains(keys, "unindexed") {
		t.Errorf("ranked %v, want [both one] then none and titled, without unindexed", keys)
	}
	if got := s.searchKeys(`{"namespace_prefix":["notes"],"query":"gardening"}`); !slices.Contains(got, "titled") {
		t.Errorf("query on the indexed title found %v, want titled", got)
	}
}

func TestStoreNamespacesPagination(t *testing.T) {
	t.Parallel()
	s := newStoreServer(t, false)
	for _, ns := range []string{`["a","x","1"]`, `["a","y"]`, `["b","x"]`, `["c"]`} {
		s.put(ns, "k", `{}`)
	}
	for _, tc := range []struct{ body, want string }{
		{`{}`, "[[a x 1] [a y] [b x] [c]]"},
		{`{"limit":2}`, "[[a x 1] [a y]]"},
		{`{"limit":2,"offset":2}`, "[[b x] [c]]"},
		{`{"offset":4}`, "[]"},
		{`{"prefix":["a"]}`, "[[a x 1] [a y]]"},
		{`{"suffix":["x"]}`, "[[b x]]"},
		{`{"prefix":["*","x"]}`, "[[a x 1] [b x]]"},
		{`{"max_depth":1}`, "[[a] [b] [c]]"},
		{`{"prefix":["a"],"max_depth":2,"limit":1,"offset":1}`, "[[a y]]"},
	} {
		if got := fmt.Sprint(s.namespaces(tc.body)); got != tc.want {
			t.Errorf("namespaces %s = %s, want %s", tc.body, got, tc.want)
		}
	}
}

func TestStoreRoutesWithoutStore(t *testing.T) {
	t.Parallel()
	s := serveStore(t, nil, nil)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{}}`},
		{"GET", "/store/items?namespace=a&key=k", ""},
		{"DELETE", "/store/items", `{"namespace":["a"],"key":"k"}`},
		{"POST", "/store/items/search", `{}`},
		{"POST", "/store/namespaces", `{}`},
	} {
		a := s.json(c.method, c.path, c.body)
		if a.code != http.StatusNotFound || a.detail(t) != "this server has no store" {
			t.Errorf("%s %s without a store: %d %s", c.method, c.path, a.code, a.body)
		}
	}
}

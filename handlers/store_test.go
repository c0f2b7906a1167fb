package handlers_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/embed"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// storeIndex is how the Studio opens its store: the offline embedder over
// whole documents.
func storeIndex() store.Options {
	return store.Options{Index: &store.IndexConfig{Embedder: embed.Offline()}}
}

func memoryStore(t testing.TB) store.Store {
	t.Helper()
	s, err := store.NewMemory(storeIndex())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func postgresStore(t testing.TB) store.Store {
	t.Helper()
	s, err := pgstore.New(context.Background(), pgtest.Schema(t, nil), pgstore.Options{Options: storeIndex()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeBackends are the stores the Studio can run on.
var storeBackends = []struct {
	name string
	open func(testing.TB) store.Store
}{{"memory", memoryStore}, {"postgres", postgresStore}}

// storeSetup serves only the store pages (behind Secure) over s.
func storeSetup(t testing.TB, s store.Store) *fixture {
	t.Helper()
	r := chi.NewRouter()
	handlers.Routes{Store: s}.Mount(r)
	srv := httptest.NewServer(handlers.Secure(r))
	t.Cleanup(srv.Close)
	return &fixture{srv: srv}
}

func mustPut(t testing.TB, s store.Store, ns []string, key string, v map[string]any) {
	t.Helper()
	if err := store.Put(context.Background(), s, ns, key, v); err != nil {
		t.Fatal(err)
	}
}

func want(t testing.TB, r response, code int, parts ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body %.2000s", r.code, code, r.body)
	}
	for _, p := range parts {
		if !strings.Contains(r.body, p) {
			t.Fatalf("body lacks %q: %.3000s", p, r.body)
		}
	}
}

func putForm(ns, key, value string) url.Values {
	return url.Values{"namespace": {ns}, "key": {key}, "value": {value}}
}

// A person puts items through the form, sees them in the tree, in their
// namespace and on their own page (escaped, indented), then deletes one.
func TestStorePutBrowseAndDelete(t *testing.T) {
	t.Parallel()
	for _, b := range storeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			f := storeSetup(t, s)
			r := f.post(t, "/store/put", putForm("notes.alice", "n1", `{"text": "<script>alert(1)</script>", "tags": ["a"]}`))
			if r.code != http.StatusSeeOther || r.location != "/store/item?key=n1&ns=notes.alice" {
				t.Fatalf("put = %d to %q, want 303 to the item", r.code, r.location)
			}
			want(t, f.post(t, "/store/put", putForm("notes.bob", "n2", `{"text": "hello"}`)), http.StatusSeeOther)

			item := f.get(t, r.location)
			want(t, item, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;", "{\n  &#34;tags&#34;: [\n    &#34;a&#34;\n  ],")
			if strings.Contains(item.body, "<script>alert") {
				t.Fatal("the item page renders the value unescaped")
			}

			tree := f.get(t, "/store")
			want(t, tree, http.StatusOK, `href="/store/items?ns=notes"`, `href="/store/items?ns=notes.alice"`, `href="/store/items?ns=notes.bob"`)
			top := f.get(t, "/store?depth=1")
			want(t, top, http.StatusOK, `href="/store/items?ns=notes"`)
			if strings.Contains(top.body, "notes.alice") {
				t.Fatal("depth 1 shows the second level")
			}

			items := f.get(t, "/store/items?ns=notes")
			want(t, items, http.StatusOK, ">n1<", ">n2<")
			only := f.get(t, "/store/items?ns=notes.bob")
			want(t, only, http.StatusOK, ">n2<")
			if strings.Contains(only.body, ">n1<") {
				t.Fatal("notes.bob lists an item of notes.alice")
			}

			// Without the confirmation nothing is deleted: the answer asks.
			ask := f.post(t, "/store/delete", url.Values{"namespace": {"notes.alice"}, "key": {"n1"}})
			want(t, ask, http.StatusOK, `id="confirm-delete"`, "Nothing was deleted yet")
			if it, err := store.Get(context.Background(), s, []string{"notes", "alice"}, "n1"); err != nil || it == nil {
				t.Fatalf("an unconfirmed delete deleted: Get = %v, %v", it, err)
			}
			del := f.post(t, "/store/delete", url.Values{"namespace": {"notes.alice"}, "key": {"n1"}, "confirm": {"yes"}})
			if del.code != http.StatusSeeOther || del.location != "/store/items?ns=notes.alice" {
				t.Fatalf("delete = %d to %q", del.code, del.location)
			}
			want(t, f.get(t, "/store/item?ns=notes.alice&key=n1"), http.StatusNotFound, "No item")
			if it, err := store.Get(context.Background(), s, []string{"notes", "alice"}, "n1"); err != nil || it != nil {
				t.Fatalf("after delete Get = %v, %v", it, err)
			}
		})
	}
}

// A refused put says what was wrong, echoes what was typed, and writes
// nothing.
func TestStorePutRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, ns, key, value, msg string
	}{
		{"empty namespace", "", "k", `{}`, "namespace is empty"},
		{"empty label", "a..b", "k", `{}`, "label 1"},
		{"reserved root", "langgraph.x", "k", `{}`, "reserved"},
		{"empty key", "a", "", `{}`, "key is empty"},
		{"bad JSON", "a", "k", `{"x": }`, "bad JSON"},
		{"not an object", "a", "k", `[1, 2]`, "want a JSON object"},
		{"duplicate keys", "a", "k", `{"x": 1, "x": 2}`, "x"},
		{"empty value", "a", "k", ``, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := memoryStore(t)
			f := storeSetup(t, s)
			r := f.post(t, "/store/put", putForm(tc.ns, tc.key, tc.value))
			want(t, r, http.StatusBadRequest, `id="form-error"`, html.EscapeString(tc.msg))
			if tc.value != "" && !strings.Contains(r.body, html.EscapeString(tc.value)) {
				t.Fatalf("the form does not echo the value %q", tc.value)
			}
			if ns, err := store.ListNamespaces(context.Background(), s, store.ListNamespacesOp{}); err != nil || len(ns) != 0 {
				t.Fatalf("a refused put wrote something: %v, %v", ns, err)
			}
		})
	}
}

func TestStoreBadRequests(t *testing.T) {
	t.Parallel()
	s := memoryStore(t)
	mustPut(t, s, []string{"a"}, "k", map[string]any{"x": 1.0})
	f := storeSetup(t, s)
	for _, tc := range []struct {
		name, method, path string
		form               url.Values
		code               int
		msg                string
	}{
		{"item without key", "GET", "/store/item?ns=a", nil, 400, "key is empty"},
		{"item without namespace", "GET", "/store/item?key=k", nil, 400, "namespace is empty"},
		{"missing item", "GET", "/store/item?ns=a&key=nope", nil, 404, "No item"},
		{"items with empty label", "GET", "/store/items?ns=a..b", nil, 400, "label 1"},
		{"items bad page", "GET", "/store/items?ns=a&page=-1", nil, 400, "page"},
		{"tree bad depth", "GET", "/store?depth=zero", nil, 400, "depth"},
		{"delete without key", "POST", "/store/delete", url.Values{"namespace": {"a"}}, 400, "key is empty"},
		{"delete bad namespace", "POST", "/store/delete", url.Values{"namespace": {"a."}, "key": {"k"}}, 400, "label 1"},
		{"get delete", "GET", "/store/delete?namespace=a&key=k", nil, 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r response
			if tc.method == "POST" {
				r = f.post(t, tc.path, tc.form)
			} else {
				r = f.get(t, tc.path)
			}
			want(t, r, tc.code, tc.msg)
		})
	}
	if it, err := store.Get(context.Background(), s, []string{"a"}, "k"); err != nil || it == nil {
		t.Fatalf("a refused request deleted the item: %v, %v", it, err)
	}
}

// The namespace page shows StorePageSize items, newest first, with links
// to the neighbouring pages.
func TestStoreItemsArePaged(t *testing.T) {
	t.Parallel()
	s := memoryStore(t)
	n := handlers.StorePageSize + 5
	for i := range n {
		mustPut(t, s, []string{"many"}, fmt.Sprintf("k%02d", i), map[string]any{"i": float64(i)})
	}
	f := storeSetup(t, s)
	rows := regexp.MustCompile(`<tr class="store-item">`)
	first := f.get(t, "/store/items?ns=many")
	want(t, first, http.StatusOK, `id="next" href="/store/items?ns=many&amp;page=1"`)
	if got := len(rows.FindAllString(first.body, -1)); got != handlers.StorePageSize {
		t.Fatalf("first page has %d rows, want %d", got, handlers.StorePageSize)
	}
	second := f.get(t, "/store/items?ns=many&page=1")
	want(t, second, http.StatusOK, `id="prev"`)
	if got := len(rows.FindAllString(second.body, -1)); got != 5 || strings.Contains(second.body, `id="next"`) {
		t.Fatalf("second page has %d rows (want 5) or a next link", got)
	}
}

// Search ranks by meaning and shows scores; a filter narrows it; a filter
// the parser refuses is a 400 carrying the parser's message.
func TestStoreSearch(t *testing.T) {
	t.Parallel()
	for _, b := range storeBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := b.open(t)
			mustPut(t, s, []string{"docs", "pets"}, "cat", map[string]any{"text": "The cat sleeps on the warm windowsill", "kind": "pet"})
			mustPut(t, s, []string{"docs", "money"}, "revenue", map[string]any{"text": "Quarterly revenue grew by ten percent", "kind": "finance"})
			mustPut(t, s, []string{"docs", "food"}, "bread", map[string]any{"text": "How to bake sourdough bread in your oven", "kind": "recipe"})
			f := storeSetup(t, s)

			r := f.get(t, "/store/search?"+url.Values{"ns": {"docs"}, "q": {"company earnings increased"}}.Encode())
			want(t, r, http.StatusOK, `<th>score</th>`)
			key, score := firstResult(t, r.body)
			if key != "revenue" || score == "" {
				t.Fatalf("first result %q with score %q, want revenue with a score", key, score)
			}

			r = f.get(t, "/store/search?"+url.Values{"q": {"company earnings increased"}, "filter": {`{"kind": "recipe"}`}}.Encode())
			want(t, r, http.StatusOK)
			if key, _ := firstResult(t, r.body); key != "bread" || strings.Count(r.body, `<tr class="store-item">`) != 1 {
				t.Fatalf("the filter let through more than the recipe: first %q", key)
			}

			r = f.get(t, "/store/search?"+url.Values{"ns": {"docs.pets"}}.Encode())
			want(t, r, http.StatusOK, ">cat<")
			if strings.Contains(r.body, "<th>score</th>") || strings.Contains(r.body, ">bread<") {
				t.Fatal("a search without a query shows scores or items outside the namespace")
			}

			for _, bad := range []struct{ filter, msg string }{
				{`{"kind": {"$like": "x"}}`, "$like"},
				{`{"kind": }`, "bad JSON"},
				{`"pet"`, "want a JSON object"},
			} {
				r := f.get(t, "/store/search?"+url.Values{"q": {"x"}, "filter": {bad.filter}}.Encode())
				want(t, r, http.StatusBadRequest, `id="form-error"`, "filter: ", bad.msg)
			}
			if _, err := store.ParseFilter(map[string]any{"kind": map[string]any{"$like": "x"}}); err == nil ||
				!strings.Contains(f.get(t, "/store/search?"+url.Values{"filter": {`{"kind": {"$like": "x"}}`}}.Encode()).body, html.EscapeString(err.Error())) {
				t.Fatalf("the page does not carry the parser's message (%v)", err)
			}
		})
	}
}

var firstRow = regexp.MustCompile(`(?s)<tr class="store-item"><td class="num score">([^<]*)</td>.*?<td class="key"><a [^>]*>([^<]*)</a>`)
var firstRowNoScore = regexp.MustCompile(`(?s)<tr class="store-item">.*?<td class="key"><a [^>]*>([^<]*)</a>`)

// firstResult is the key and score of a results page's first row.
func firstResult(t testing.TB, body string) (key, score string) {
	t.Helper()
	if m := firstRow.FindStringSubmatch(body); m != nil {
		return m[2], m[1]
	}
	if m := firstRowNoScore.FindStringSubmatch(body); m != nil {
		return m[1], ""
	}
	t.Fatalf("no results: %.2000s", body)
	return "", ""
}

// Without a store the pages are not there.
func TestStorePagesNeedAStore(t *testing.T) {
	t.Parallel()
	f := storeSetup(t, nil)
	want(t, f.get(t, "/store"), http.StatusNotFound)
}

// A form posted from another site writes nothing.
func TestStoreCrossSitePutIsRefused(t *testing.T) {
	t.Parallel()
	s := memoryStore(t)
	f := storeSetup(t, s)
	r := f.do(t, http.MethodPost, "/store/put", strings.NewReader(putForm("a", "k", `{"x": 1}`).Encode()), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"})
	want(t, r, http.StatusForbidden)
	if it, err := store.Get(context.Background(), s, []string{"a"}, "k"); err != nil || it != nil {
		t.Fatalf("a cross-site put wrote %v (%v)", it, err)
	}
}

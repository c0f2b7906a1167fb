package handlers

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/web"
)

// Store page sizes and bounds.
const (
	// StorePageSize is how many items one page of a namespace shows.
	StorePageSize = 20
	// StoreSearchLimit is how many search results are shown.
	StoreSearchLimit = 10
	// StoreTreeDepth is the namespace tree's default depth; ?depth=
	// overrides it up to store.MaxNamespaceLabels.
	StoreTreeDepth = 3
	// storeTreeLimit caps the namespaces listed on the tree page.
	storeTreeLimit = 500
)

// parseNamespace reads a dot-separated namespace from a URL or form. An
// empty string is the root (nil), allowed only when root is true. Labels
// cannot contain ".", so the split is unambiguous.
func parseNamespace(s string, root bool) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		if root {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: the namespace is empty; type dot-separated labels such as users.alice", store.ErrInvalidNamespace)
	}
	ns := store.SplitNamespace(s)
	if !root {
		if err := store.ValidateNamespace(ns); err != nil {
			return nil, err
		}
	}
	for i, l := range ns {
		if l == "" {
			return nil, fmt.Errorf("%w: label %d of %q is empty", store.ErrInvalidNamespace, i, s)
		}
	}
	return ns, nil
}

// itemHref is the item page's URL, with query values escaped.
func itemHref(ns []string, key string) string {
	return "/store/item?" + url.Values{"ns": {store.JoinNamespace(ns)}, "key": {key}}.Encode()
}

// itemsHref is a namespace's items page.
func itemsHref(ns []string) string {
	return "/store/items?" + url.Values{"ns": {store.JoinNamespace(ns)}}.Encode()
}

// prettyJSON is v as indented JSON. HTML characters stay as typed (no
// \u003c): the template escapes the text, and a person editing the value
// sees what they stored.
func prettyJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("(not JSON: %v)", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// namespaceTree expands the listed (depth-truncated) namespaces into every
// prefix of them, sorted, so the page shows a tree whose every node links
// to its items.
func namespaceTree(list [][]string) []web.StoreNamespace {
	seen := map[string]bool{}
	var out []web.StoreNamespace
	for _, ns := range list {
		for d := 1; d <= len(ns); d++ {
			j := store.JoinNamespace(ns[:d])
			if seen[j] {
				continue
			}
			seen[j] = true
			out = append(out, web.StoreNamespace{Label: ns[d-1], Path: j, Depth: d - 1, Href: itemsHref(ns[:d])})
		}
	}
	slices.SortFunc(out, func(a, b web.StoreNamespace) int {
		return slices.Compare(store.SplitNamespace(a.Path), store.SplitNamespace(b.Path))
	})
	return out
}

func atoiParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := strings.TrimSpace(r.URL.Query().Get(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%w: %s %q is not a whole number from %d to %d", errBadForm, name, s, lo, hi)
	}
	return n, nil
}

// storeIndexView builds the tree page; the put form starts empty unless
// the caller echoes a refused put.
func storeIndexView(r *http.Request, rt Routes) (web.StoreIndexView, error) {
	depth, err := atoiParam(r, "depth", StoreTreeDepth, 1, store.MaxNamespaceLabels)
	if err != nil {
		return web.StoreIndexView{}, err
	}
	list, err := store.ListNamespaces(r.Context(), rt.Store, store.ListNamespacesOp{MaxDepth: depth, Limit: storeTreeLimit})
	if err != nil {
		return web.StoreIndexView{}, err
	}
	return web.StoreIndexView{Depth: depth, Namespaces: namespaceTree(list), Truncated: len(list) == storeTreeLimit}, nil
}

// StoreIndex answers GET /store: the namespace tree (to ?depth= labels),
// a search form and a put form.
func StoreIndex(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := storeIndexView(r, rt)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		render(w, r, rt.Logger, http.StatusOK, web.StoreIndex(v))
	})
}

func itemRows(items []store.SearchItem) []web.StoreItemRow {
	out := make([]web.StoreItemRow, 0, len(items))
	for _, it := range items {
		row := web.StoreItemRow{
			Namespace: store.JoinNamespace(it.Namespace), Key: it.Key,
			Href: itemHref(it.Namespace, it.Key), Updated: when(it.UpdatedAt),
		}
		if it.Score != nil {
			row.Score = strconv.FormatFloat(*it.Score, 'f', 3, 64)
		}
		row.Preview = strings.Join(strings.Fields(prettyJSON(it.Value)), " ")
		if len(row.Preview) > 120 {
			row.Preview = strings.ToValidUTF8(row.Preview[:120], "") + "…"
		}
		out = append(out, row)
	}
	return out
}

// StoreItems answers GET /store/items?ns=a.b&page=N: the items under the
// namespace (its sub-namespaces included), newest first, a page at a time.
func StoreItems(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, err := parseNamespace(r.URL.Query().Get("ns"), true)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		page, err := atoiParam(r, "page", 0, 0, store.MaxOffset/StorePageSize)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		// One extra item tells whether a next page exists.
		items, err := store.Search(r.Context(), rt.Store, store.SearchOp{NamespacePrefix: ns, Limit: StorePageSize + 1, Offset: page * StorePageSize})
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v := web.StoreItemsView{Namespace: store.JoinNamespace(ns), Page: page}
		if len(items) > StorePageSize {
			items = items[:StorePageSize]
			v.Next = pageHref(ns, page+1)
		}
		if page > 0 {
			v.Prev = pageHref(ns, page-1)
		}
		v.Items = itemRows(items)
		render(w, r, rt.Logger, http.StatusOK, web.StoreItems(v))
	})
}

func pageHref(ns []string, page int) string {
	return "/store/items?" + url.Values{"ns": {store.JoinNamespace(ns)}, "page": {strconv.Itoa(page)}}.Encode()
}

// StoreItem answers GET /store/item?ns=…&key=…: the item's value as
// indented JSON, with forms to overwrite or delete it.
func StoreItem(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		ns, err := parseNamespace(q.Get("ns"), false)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		key := q.Get("key")
		if err := store.ValidateKey(key); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		it, err := store.Get(r.Context(), rt.Store, ns, key)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if it == nil {
			renderError(w, r, rt.Logger, http.StatusNotFound, titleOf(http.StatusNotFound),
				fmt.Sprintf("No item %q in namespace %q (it may have expired or been deleted).", key, store.JoinNamespace(ns)))
			return
		}
		render(w, r, rt.Logger, http.StatusOK, web.StoreItem(web.StoreItemView{
			Namespace: store.JoinNamespace(it.Namespace), Key: it.Key, JSON: prettyJSON(it.Value),
			Created: when(it.CreatedAt), Updated: when(it.UpdatedAt), ItemsHref: itemsHref(it.Namespace),
		}))
	})
}

// StoreSearch answers GET /store/search?ns=…&q=…&filter=…: items under the
// namespace ranked by semantic similarity to q (newest first without q),
// restricted by an optional JSON filter (see store.ParseFilter). A filter
// that does not parse is a 400 with the parser's message.
func StoreSearch(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		v := web.StoreSearchView{Namespace: q.Get("ns"), Query: q.Get("q"), Filter: q.Get("filter")}
		refuse := func(err error) {
			code := statusOf(err)
			if code >= 500 {
				fail(w, r, rt.Logger, err)
				return
			}
			v.Error = err.Error()
			render(w, r, rt.Logger, code, web.StoreSearch(v))
		}
		ns, err := parseNamespace(v.Namespace, true)
		if err != nil {
			refuse(err)
			return
		}
		op := store.SearchOp{NamespacePrefix: ns, Query: strings.TrimSpace(v.Query), Limit: StoreSearchLimit}
		if strings.TrimSpace(v.Filter) != "" {
			m, err := DecodeJSONObject(v.Filter)
			if err != nil {
				refuse(fmt.Errorf("filter: %w", err))
				return
			}
			if _, err := store.ParseFilter(m); err != nil {
				refuse(fmt.Errorf("filter: %w", err))
				return
			}
			op.Filter = m
		}
		items, err := store.Search(r.Context(), rt.Store, op)
		if err != nil {
			refuse(err)
			return
		}
		v.Searched, v.Ranked = true, op.Query != ""
		v.Items = itemRows(items)
		render(w, r, rt.Logger, http.StatusOK, web.StoreSearch(v))
	})
}

// StorePut answers POST /store/put (namespace, key, value, and optional
// ttl and index): it writes the item and redirects to it. ttl is minutes
// (empty: the store's default); index is "default" (the store's index
// fields), "none" (embed nothing) or "paths" (embed index_paths, a
// comma-separated list of paths such as text, tags[*]). Bad input writes
// nothing and re-renders the form with what was typed and what was wrong
// (400).
func StorePut(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		nsText, key, raw := strings.TrimSpace(r.PostForm.Get("namespace")), r.PostForm.Get("key"), r.PostForm.Get("value")
		refuse := func(err error) {
			code := statusOf(err)
			if code >= 500 {
				fail(w, r, rt.Logger, err)
				return
			}
			v, verr := storeIndexView(r, rt)
			if verr != nil {
				fail(w, r, rt.Logger, verr)
				return
			}
			v.PutNamespace, v.PutKey, v.PutValue, v.PutError = nsText, key, raw, err.Error()
			v.PutTTL, v.PutIndex, v.PutIndexPaths = r.PostForm.Get("ttl"), r.PostForm.Get("index"), r.PostForm.Get("index_paths")
			render(w, r, rt.Logger, code, web.StoreIndex(v))
		}
		ns, err := parseNamespace(nsText, false)
		if err != nil {
			refuse(err)
			return
		}
		if err := store.ValidateKey(key); err != nil {
			refuse(err)
			return
		}
		value, err := DecodeJSONObject(raw)
		if err != nil {
			refuse(fmt.Errorf("value: %w", err))
			return
		}
		op := store.PutOp{Namespace: ns, Key: key, Value: value}
		if op.TTL, err = putTTL(r.PostForm.Get("ttl")); err != nil {
			refuse(err)
			return
		}
		if op.Index, err = putIndex(r.PostForm.Get("index"), r.PostForm.Get("index_paths")); err != nil {
			refuse(err)
			return
		}
		if _, err := store.Do(r.Context(), rt.Store, op); err != nil {
			refuse(err)
			return
		}
		http.Redirect(w, r, itemHref(ns, key), http.StatusSeeOther)
	})
}

// StoreDelete answers POST /store/delete (namespace, key, confirm): it
// deletes the item (a missing one is not an error) and redirects to its
// namespace. Without confirm=yes nothing is deleted: the answer is a page
// asking to confirm, so one stray click or a replayed form cannot delete.
func StoreDelete(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		ns, err := parseNamespace(r.PostForm.Get("namespace"), false)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		key := r.PostForm.Get("key")
		if err := store.ValidateKey(key); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		if r.PostForm.Get("confirm") != "yes" {
			render(w, r, rt.Logger, http.StatusOK, web.StoreDeleteConfirm(web.StoreItemView{
				Namespace: store.JoinNamespace(ns), Key: key, ItemsHref: itemsHref(ns), Href: itemHref(ns, key)}))
			return
		}
		if err := store.Delete(r.Context(), rt.Store, ns, key); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		http.Redirect(w, r, itemsHref(ns), http.StatusSeeOther)
	})
}

// MaxTTLMinutes bounds the put form's TTL: ten years, far below where
// minutes overflow a time.Duration.
const MaxTTLMinutes = 10 * 365 * 24 * 60

// putTTL reads the put form's TTL in minutes (fractions allowed, as
// upstream counts them); empty keeps the store's default (0).
func putTTL(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	m, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(m) || m <= 0 || m > MaxTTLMinutes {
		return 0, fmt.Errorf("%w: TTL %q is not a number of minutes above 0 and at most %d (leave it empty for the store's default)", store.ErrInvalidOp, s, MaxTTLMinutes)
	}
	d := time.Duration(m * float64(time.Minute))
	if d <= 0 {
		return 0, fmt.Errorf("%w: TTL %q is too short", store.ErrInvalidOp, s)
	}
	return d, nil
}

// putIndex reads the put form's index choice into PutOp.Index: nil for
// the store's default fields, store.NoIndex for none, or the listed paths
// (each checked with store.ParsePath).
func putIndex(mode, paths string) ([]string, error) {
	switch strings.TrimSpace(mode) {
	case "", "default":
		return nil, nil
	case "none":
		return store.NoIndex, nil
	case "paths":
	default:
		return nil, fmt.Errorf("%w: index %q is not default, none or paths", store.ErrInvalidOp, mode)
	}
	var out []string
	for _, p := range strings.Split(paths, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if _, err := store.ParsePath(p); err != nil {
			return nil, fmt.Errorf("index path %q: %w", p, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: choose which paths to embed (comma-separated, e.g. text, tags[*]), or pick none", store.ErrInvalidPath)
	}
	return out, nil
}

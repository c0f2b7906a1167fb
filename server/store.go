package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/store"
)

// mountStore registers the store routes. They are registered even without
// a store, so that a client learns "this server has no store" rather than
// "no such route", and so that the pages and the API keep one route set
// whatever the configuration.
func (a *API) mountStore(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(a.needStore)
		r.Put("/store/items", a.putItem)
		r.Get("/store/items", a.getItem)
		r.Delete("/store/items", a.deleteItem)
		r.Post("/store/items/search", a.searchItems)
		r.Post("/store/namespaces", a.listNamespaces)
	})
}

func (a *API) needStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Store == nil {
			fail(w, r, a.log, notFound("this server has no store"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// putItemRequest is the body of PUT /store/items. Index and TTL are raw
// because null, absent and false mean different things.
type putItemRequest struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Index     json.RawMessage `json:"index"`
	TTL       json.RawMessage `json:"ttl"`
}

// putItem answers PUT /store/items: 204 once the item is stored.
//
// index: absent or null embeds the store's default fields, false embeds
// nothing, and a list of paths embeds those. ttl is in minutes (fractions
// allowed, as upstream counts them); absent or null applies the store's
// default TTL. The Python SDK sends "ttl": null on every put, so null
// cannot mean "never expire" without making a configured default TTL
// useless to its users.
func (a *API) putItem(w http.ResponseWriter, r *http.Request) {
	var req putItemRequest
	if err := decodeBody(r, &req, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	op, err := req.op()
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	if _, err := store.Do(r.Context(), a.cfg.Store, op); err != nil {
		fail(w, r, a.log, storeError(err, putFields))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (req putItemRequest) op() (store.PutOp, error) {
	op := store.PutOp{Namespace: req.Namespace, Key: req.Key}
	if err := checkItemID(req.Namespace, req.Key); err != nil {
		return op, err
	}
	if isJSONNull(req.Value) {
		return op, invalid("value", "required: send the item as a JSON object (DELETE /store/items removes an item)")
	}
	if err := decodeJSONObject(req.Value, &op.Value); err != nil {
		return op, invalid("value", "want an object, got %s", err)
	}
	v, err := store.NormalizeValue(op.Value)
	if err != nil {
		return op, invalid("value", "%s", trimSentinel(err, store.ErrInvalidValue))
	}
	op.Value = v
	if op.Index, err = parseIndex(req.Index); err != nil {
		return op, err
	}
	if op.TTL, err = parseTTL(req.TTL); err != nil {
		return op, err
	}
	return op, nil
}

// parseIndex reads index: null (the store's default fields), false
// (nothing) or a list of field paths.
func parseIndex(raw json.RawMessage) ([]string, error) {
	if isJSONNull(raw) {
		return nil, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		if b {
			return nil, invalid("index", "true is not an index choice: send null for the store's default fields, false for none, or a list of field paths")
		}
		return store.NoIndex, nil
	}
	var paths []string
	if err := json.Unmarshal(raw, &paths); err != nil {
		return nil, invalid("index", "want null, false or an array of field paths, got %s", rawKind(raw))
	}
	if paths == nil {
		paths = store.NoIndex
	}
	for i, p := range paths {
		if _, err := store.ParsePath(p); err != nil {
			return nil, invalid(fmt.Sprintf("index[%d]", i), "%s", trimSentinel(err, store.ErrInvalidPath))
		}
	}
	return paths, nil
}

// parseTTL reads ttl: null or a number of minutes above 0, bounded as
// the Studio's put form bounds it.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	if isJSONNull(raw) {
		return 0, nil
	}
	var m float64
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, invalid("ttl", "want a number of minutes or null, got %s", rawKind(raw))
	}
	if m <= 0 || m > handlers.MaxTTLMinutes {
		return 0, invalid("ttl", "%s minutes is outside the range above 0 and at most %d (send null for the store's default)", raw, handlers.MaxTTLMinutes)
	}
	d := time.Duration(m * float64(time.Minute))
	if d < time.Millisecond {
		return 0, invalid("ttl", "%s minutes is below a millisecond", raw)
	}
	return d, nil
}

// getItem answers GET /store/items?namespace=a.b&key=k[&refresh_ttl=]:
// the item, or JSON null when it does not exist (a miss is an answer, not
// an error: the SDKs return null for it).
func (a *API) getItem(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ns, err := queryNamespace(q.Get("namespace"))
	if err != nil {
		fail(w, r, a.log, err)
		return
	}
	key := q.Get("key")
	if err := checkItemID(ns, key); err != nil {
		fail(w, r, a.log, err)
		return
	}
	op := store.GetOp{Namespace: ns, Key: key}
	if op.RefreshTTL, err = boolParam(q.Get("refresh_ttl"), "refresh_ttl"); err != nil {
		fail(w, r, a.log, err)
		return
	}
	res, err := store.Do(r.Context(), a.cfg.Store, op)
	if err != nil {
		fail(w, r, a.log, storeError(err, getFields))
		return
	}
	if res.Item == nil {
		writeJSON(w, http.StatusOK, nil)
		return
	}
	writeJSON(w, http.StatusOK, res.Item)
}

// queryNamespace splits GET's namespace, which the SDKs send joined with
// "." (they refuse labels containing one).
func queryNamespace(s string) ([]string, error) {
	if s == "" {
		return nil, invalid("namespace", "required: send the labels joined with \".\", as users.alice")
	}
	return store.SplitNamespace(s), nil
}

// boolParam reads an optional boolean query parameter as the SDKs send it
// (JSON true/false; 1/0 too).
func boolParam(s, name string) (*bool, error) {
	if s == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return nil, invalid(name, "want true or false, got %q", s)
	}
	return &b, nil
}

type deleteItemRequest struct {
	Namespace []string `json:"namespace"`
	Key       string   `json:"key"`
}

// deleteItem answers DELETE /store/items with a JSON body naming the item:
// 204, whether or not it existed (a retried delete must not fail).
func (a *API) deleteItem(w http.ResponseWriter, r *http.Request) {
	var req deleteItemRequest
	if err := decodeBody(r, &req, false); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := checkItemID(req.Namespace, req.Key); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if err := store.Delete(r.Context(), a.cfg.Store, req.Namespace, req.Key); err != nil {
		fail(w, r, a.log, storeError(err, putFields))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type searchItemsRequest struct {
	NamespacePrefix []string        `json:"namespace_prefix"`
	Filter          json.RawMessage `json:"filter"`
	Limit           *int            `json:"limit"`
	Offset          *int            `json:"offset"`
	Query           *string         `json:"query"`
	RefreshTTL      *bool           `json:"refresh_ttl"`
}

// searchItems answers POST /store/items/search: {"items": [...]}, a page
// of the items under namespace_prefix that match filter, ranked by
// similarity to query (highest score first) when there is one and newest
// first otherwise.
func (a *API) searchItems(w http.ResponseWriter, r *http.Request) {
	var req searchItemsRequest
	if err := decodeBody(r, &req, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	op := store.SearchOp{NamespacePrefix: req.NamespacePrefix, RefreshTTL: req.RefreshTTL}
	var err error
	if op.Limit, op.Offset, err = storePage(req.Limit, req.Offset, store.DefaultSearchLimit); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if !isJSONNull(req.Filter) {
		if err := decodeJSONObject(req.Filter, &op.Filter); err != nil {
			fail(w, r, a.log, invalid("filter", "want an object, got %s", err))
			return
		}
		if _, err := store.ParseFilter(op.Filter); err != nil {
			fail(w, r, a.log, invalid("filter", "%s", trimSentinel(err, store.ErrInvalidFilter)))
			return
		}
	}
	if req.Query != nil {
		op.Query = strings.TrimSpace(*req.Query)
	}
	items, err := store.Search(r.Context(), a.cfg.Store, op)
	if err != nil {
		fail(w, r, a.log, storeError(err, searchFields))
		return
	}
	if items == nil {
		items = []store.SearchItem{}
	}
	// store.Item and store.SearchItem carry the API's JSON names; score is
	// null for a search without a query.
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

type listNamespacesRequest struct {
	Prefix   []string `json:"prefix"`
	Suffix   []string `json:"suffix"`
	MaxDepth *int     `json:"max_depth"`
	Limit    *int     `json:"limit"`
	Offset   *int     `json:"offset"`
}

// listNamespaces answers POST /store/namespaces: {"namespaces": [[...]]},
// a page of the distinct namespaces that start with prefix and end with
// suffix ("*" matching any one label), cut to max_depth labels.
func (a *API) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var req listNamespacesRequest
	if err := decodeBody(r, &req, true); err != nil {
		fail(w, r, a.log, err)
		return
	}
	var op store.ListNamespacesOp
	var err error
	if op.Limit, op.Offset, err = storePage(req.Limit, req.Offset, store.DefaultListLimit); err != nil {
		fail(w, r, a.log, err)
		return
	}
	if req.MaxDepth != nil {
		if *req.MaxDepth < 1 || *req.MaxDepth > store.MaxNamespaceLabels {
			fail(w, r, a.log, invalid("max_depth", "%d is outside 1..%d", *req.MaxDepth, store.MaxNamespaceLabels))
			return
		}
		op.MaxDepth = *req.MaxDepth
	}
	for _, c := range []struct {
		field string
		typ   store.MatchType
		path  []string
	}{{"prefix", store.MatchPrefix, req.Prefix}, {"suffix", store.MatchSuffix, req.Suffix}} {
		if len(c.path) == 0 {
			continue
		}
		cond := store.MatchCondition{Type: c.typ, Path: c.path}
		// The store checks conditions before touching any data; checking
		// each alone says which field was wrong.
		if _, err := store.Prepare(r.Context(), []store.Op{store.ListNamespacesOp{MatchConditions: []store.MatchCondition{cond}}}, store.Options{}); err != nil {
			msg := strings.TrimPrefix(trimSentinel(err, store.ErrInvalidNamespace), string(c.typ)+" match condition: ")
			fail(w, r, a.log, invalid(c.field, "%s", msg))
			return
		}
		op.MatchConditions = append(op.MatchConditions, cond)
	}
	list, err := store.ListNamespaces(r.Context(), a.cfg.Store, op)
	if err != nil {
		fail(w, r, a.log, storeError(err, nil))
		return
	}
	if list == nil {
		list = [][]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": list})
}

// storePage reads limit (1..store.MaxLimit, def when absent) and offset.
func storePage(limit, offset *int, def int) (int, int, error) {
	l, o := def, 0
	if limit != nil {
		if l = *limit; l < 1 || l > store.MaxLimit {
			return 0, 0, invalid("limit", "%d is outside 1..%d", l, store.MaxLimit)
		}
	}
	if offset != nil {
		if o = *offset; o < 0 || o > store.MaxOffset {
			return 0, 0, invalid("offset", "%d is outside 0..%d", o, store.MaxOffset)
		}
	}
	return l, o, nil
}

// checkItemID checks an item's namespace and key, naming the field.
func checkItemID(ns []string, key string) error {
	if err := store.ValidateNamespace(ns); err != nil {
		return invalid("namespace", "%s", trimSentinel(err, store.ErrInvalidNamespace))
	}
	if err := store.ValidateKey(key); err != nil {
		return invalid("key", "%s", trimSentinel(err, store.ErrInvalidKey))
	}
	return nil
}

// Which request field each of the store's input errors is about, per
// route, for the errors the handlers' own checks do not catch first.
var (
	putFields    = map[error]string{store.ErrInvalidNamespace: "namespace", store.ErrInvalidKey: "key", store.ErrInvalidValue: "value", store.ErrInvalidPath: "index"}
	getFields    = map[error]string{store.ErrInvalidNamespace: "namespace", store.ErrInvalidKey: "key"}
	searchFields = map[error]string{store.ErrInvalidNamespace: "namespace_prefix", store.ErrInvalidFilter: "filter", store.ErrNoIndex: "query"}
)

// storeError turns a store's input error into a 422 naming the field (the
// store says what was wrong; the route knows which field carried it).
// Anything else (a database or embedder failure) stays as it is, for fail
// to log and answer without internals.
func storeError(err error, fields map[error]string) error {
	for sentinel, field := range fields {
		if errors.Is(err, sentinel) {
			if sentinel == store.ErrNoIndex {
				return invalid(field, "this server's store has no embedder, so it cannot search by meaning; search without a query")
			}
			return invalid(field, "%s", trimSentinel(err, sentinel))
		}
	}
	return err
}

var opPrefix = regexp.MustCompile(`^op \d+: `)

// trimSentinel is err's message without the batch position and the
// sentinel's own text, which the field name replaces.
func trimSentinel(err error, sentinel error) string {
	msg := opPrefix.ReplaceAllString(err.Error(), "")
	msg = strings.Replace(msg, sentinel.Error()+": ", "", 1)
	return msg
}

func isJSONNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// decodeJSONObject decodes a JSON object with numbers kept exact until the
// store normalizes them; a non-object is described by its kind.
func decodeJSONObject(raw json.RawMessage, v *map[string]any) error {
	if k := rawKind(raw); k != "an object" {
		return errors.New(k)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	return dec.Decode(v)
}

// rawKind names the kind of a JSON value, for messages.
func rawKind(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "nothing"
	}
	switch s[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

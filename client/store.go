package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// StoreClient calls the server's long-term memory: namespaced JSON items
// with filters, TTL and semantic search (the same store the Studio's store
// page shows).
type StoreClient struct{ c *Client }

// Item is one stored document.
type Item struct {
	// Namespace is the item's folder, e.g. ["users", "alice"].
	Namespace []string `json:"namespace"`
	// Key is unique within the namespace.
	Key string `json:"key"`
	// Value is the document; numbers come back as float64.
	Value map[string]any `json:"value"`
	// CreatedAt is when the item was first put; a re-put keeps it.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the item was last put.
	UpdatedAt time.Time `json:"updated_at"`
}

// SearchItem is an item found by SearchItems.
type SearchItem struct {
	Item
	// Score is the similarity to the search's query (1 = the same
	// meaning), highest first; nil for a search without a query.
	Score *float64 `json:"score"`
}

// PutItemOptions tune PutItem. A nil *PutItemOptions uses the server
// store's defaults.
type PutItemOptions struct {
	// Index lists the value's field paths to embed for semantic search
	// (e.g. "text", "tags[*]"); nil embeds the store's default fields.
	Index []string
	// NoIndex embeds nothing: the item is found by filters only. It
	// cannot be combined with Index.
	NoIndex bool
	// TTL expires the item that long after the put (or after the last
	// read that refreshes it); 0 uses the store's default. It is sent in
	// minutes, the API's unit.
	TTL time.Duration
}

// PutItem stores value under (namespace, key), replacing any item there.
func (s *StoreClient) PutItem(ctx context.Context, namespace []string, key string, value map[string]any, opts *PutItemOptions) error {
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	if value == nil {
		return fmt.Errorf("client: PutItem with a nil value; use DeleteItem to remove an item")
	}
	body := map[string]any{"namespace": namespace, "key": key, "value": value}
	if opts != nil {
		switch {
		case opts.NoIndex && opts.Index != nil:
			return fmt.Errorf("client: PutItemOptions sets both Index and NoIndex")
		case opts.NoIndex:
			body["index"] = false
		case opts.Index != nil:
			body["index"] = opts.Index
		}
		if opts.TTL < 0 {
			return fmt.Errorf("client: PutItemOptions.TTL %v is negative", opts.TTL)
		}
		if opts.TTL > 0 {
			body["ttl"] = opts.TTL.Minutes()
		}
	}
	return s.c.do(ctx, request{method: http.MethodPut, path: "/store/items", body: body})
}

// GetItemOptions tune GetItem.
type GetItemOptions struct {
	// RefreshTTL, when set, says whether this read restarts the item's
	// TTL; nil keeps the server store's setting.
	RefreshTTL *bool
}

// GetItem returns the item, or nil (and no error) when there is none.
func (s *StoreClient) GetItem(ctx context.Context, namespace []string, key string, opts *GetItemOptions) (*Item, error) {
	if err := checkNamespace(namespace); err != nil {
		return nil, err
	}
	q := url.Values{"namespace": {strings.Join(namespace, ".")}, "key": {key}}
	if opts != nil && opts.RefreshTTL != nil {
		q.Set("refresh_ttl", fmt.Sprint(*opts.RefreshTTL))
	}
	var it *Item
	if err := s.c.do(ctx, request{method: http.MethodGet, path: "/store/items", query: q, out: &it}); err != nil {
		return nil, err
	}
	return it, nil
}

// DeleteItem removes the item; removing a missing item is not an error.
func (s *StoreClient) DeleteItem(ctx context.Context, namespace []string, key string) error {
	if err := checkNamespace(namespace); err != nil {
		return err
	}
	return s.c.do(ctx, request{method: http.MethodDelete, path: "/store/items",
		body: map[string]any{"namespace": namespace, "key": key}})
}

// SearchItemsOptions tune SearchItems. A nil *SearchItemsOptions returns
// the first page of every item under the prefix, newest first.
type SearchItemsOptions struct {
	// Filter restricts items by value: {"status": "open"} or operators
	// such as {"age": {"$gte": 18}} ($eq, $ne, $gt, $gte, $lt, $lte).
	Filter map[string]any
	// Limit is the page size; 0 means the server's default (10).
	Limit int
	// Offset skips that many items.
	Offset int
	// Query ranks items by similarity of meaning to it, highest Score
	// first; items without embedded fields are then left out. It needs a
	// server store with an embedder.
	Query string
	// RefreshTTL, when set, says whether the returned items' TTLs
	// restart; nil keeps the server store's setting.
	RefreshTTL *bool
}

// SearchItems returns a page of the items whose namespace starts with
// namespacePrefix (whole labels; empty means every namespace).
func (s *StoreClient) SearchItems(ctx context.Context, namespacePrefix []string, opts *SearchItemsOptions) ([]SearchItem, error) {
	if err := checkLabels(namespacePrefix); err != nil {
		return nil, err
	}
	if namespacePrefix == nil {
		namespacePrefix = []string{}
	}
	body := map[string]any{"namespace_prefix": namespacePrefix}
	if o := opts; o != nil {
		if o.Filter != nil {
			body["filter"] = o.Filter
		}
		if o.Limit != 0 {
			body["limit"] = o.Limit
		}
		if o.Offset != 0 {
			body["offset"] = o.Offset
		}
		if o.Query != "" {
			body["query"] = o.Query
		}
		if o.RefreshTTL != nil {
			body["refresh_ttl"] = *o.RefreshTTL
		}
	}
	var out struct {
		Items []SearchItem `json:"items"`
	}
	if err := s.c.do(ctx, request{method: http.MethodPost, path: "/store/items/search", body: body, out: &out}); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// ListNamespacesOptions tune ListNamespaces. A nil *ListNamespacesOptions
// lists the first page of every namespace.
type ListNamespacesOptions struct {
	// Prefix and Suffix keep the namespaces that start or end with these
	// labels; a "*" label matches any one label.
	Prefix, Suffix []string
	// MaxDepth, when positive, cuts namespaces to that many labels
	// (merging those that become equal).
	MaxDepth int
	// Limit is the page size; 0 means the server's default (100).
	Limit int
	// Offset skips that many namespaces.
	Offset int
}

// ListNamespaces returns a page of the distinct namespaces, sorted.
func (s *StoreClient) ListNamespaces(ctx context.Context, opts *ListNamespacesOptions) ([][]string, error) {
	body := map[string]any{}
	if o := opts; o != nil {
		if err := checkLabels(o.Prefix); err != nil {
			return nil, fmt.Errorf("prefix: %w", err)
		}
		if err := checkLabels(o.Suffix); err != nil {
			return nil, fmt.Errorf("suffix: %w", err)
		}
		if len(o.Prefix) > 0 {
			body["prefix"] = o.Prefix
		}
		if len(o.Suffix) > 0 {
			body["suffix"] = o.Suffix
		}
		if o.MaxDepth != 0 {
			body["max_depth"] = o.MaxDepth
		}
		if o.Limit != 0 {
			body["limit"] = o.Limit
		}
		if o.Offset != 0 {
			body["offset"] = o.Offset
		}
	}
	var out struct {
		Namespaces [][]string `json:"namespaces"`
	}
	if err := s.c.do(ctx, request{method: http.MethodPost, path: "/store/namespaces", body: body, out: &out}); err != nil {
		return nil, err
	}
	return out.Namespaces, nil
}

// checkNamespace refuses, before sending, a namespace the API cannot
// carry: GET joins the labels with ".", so a label holding one would name
// another namespace.
func checkNamespace(ns []string) error {
	if len(ns) == 0 {
		return fmt.Errorf("client: the namespace is empty; give at least one label")
	}
	return checkLabels(ns)
}

func checkLabels(ns []string) error {
	for i, l := range ns {
		switch {
		case l == "":
			return fmt.Errorf("client: namespace label %d is empty", i)
		case strings.Contains(l, "."):
			return fmt.Errorf("client: namespace label %d (%q) contains \".\", which the API uses to join labels", i, l)
		}
	}
	return nil
}

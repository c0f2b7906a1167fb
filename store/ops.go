package store

import (
	"fmt"
	"time"
)

// Op is one operation in a Batch: GetOp, SearchOp, PutOp or
// ListNamespacesOp. The set is closed; implementations switch on it.
type Op interface{ isOp() }

// GetOp reads one item. Its Result.Item is nil when the item does not
// exist or has expired.
type GetOp struct {
	Namespace []string
	Key       string
	// RefreshTTL overrides the store's TTLConfig.RefreshOnRead for this
	// read; nil keeps the store's setting.
	RefreshTTL *bool
}

// SearchOp lists or searches the items under a namespace prefix. Its
// Result.Items holds at most Limit items after skipping Offset.
type SearchOp struct {
	// NamespacePrefix selects whole labels: {"users"} matches
	// {"users"} and {"users","alice"}, never {"users2"}. Empty selects
	// every namespace.
	NamespacePrefix []string
	// Filter restricts items by value; see ParseFilter for the syntax.
	Filter map[string]any
	// Limit is the page size; 0 means DefaultSearchLimit.
	Limit int
	// Offset skips that many items, counted after per-item
	// de-duplication of vector matches, so deep pages are never empty
	// while items remain.
	Offset int
	// Query, when non-empty, ranks items by the cosine similarity of their
	// best embedded field to the embedded query. Items without vectors are
	// then not returned. Without a query items come newest first
	// (UpdatedAt descending, then namespace and key) with a nil Score.
	Query string
	// RefreshTTL overrides TTLConfig.RefreshOnRead for the returned items.
	RefreshTTL *bool
}

// PutOp writes or deletes one item.
type PutOp struct {
	Namespace []string
	Key       string
	// Value is the document; nil deletes the item (and its vectors).
	Value map[string]any
	// Index chooses what is embedded: nil embeds the store's default
	// fields (IndexConfig.Fields), an empty non-nil slice (NoIndex) embeds
	// nothing, and a list of paths embeds exactly those (see ParsePath).
	// The item's previous vectors are always replaced, in the same
	// transaction as the item.
	Index []string
	// TTL is the item's time to live: 0 uses TTLConfig.Default, NoTTL
	// makes the item permanent, and a positive duration expires it that
	// long after the put (or after the last refreshing read).
	TTL time.Duration
}

// ListNamespacesOp lists distinct namespaces. Its Result.Namespaces are
// sorted bytewise by their "."-joined form.
type ListNamespacesOp struct {
	// MatchConditions must all hold.
	MatchConditions []MatchCondition
	// MaxDepth, when positive, truncates namespaces to that many labels
	// (duplicates are then merged).
	MaxDepth int
	// Limit is the page size; 0 means DefaultListLimit.
	Limit int
	// Offset skips that many namespaces.
	Offset int
}

// MatchType says which end of a namespace a MatchCondition anchors.
type MatchType string

// The match types of ListNamespacesOp.
const (
	MatchPrefix MatchType = "prefix"
	MatchSuffix MatchType = "suffix"
)

// MatchCondition requires a namespace to start (MatchPrefix) or end
// (MatchSuffix) with Path, where a "*" label matches exactly one label of
// any value. Labels are compared exactly: no other character is special.
type MatchCondition struct {
	Type MatchType
	Path []string
}

// Result is the outcome of one Op, at the same index as the op.
type Result struct {
	// Item is the GetOp result (nil when absent).
	Item *Item
	// Items is the SearchOp result.
	Items []SearchItem
	// Namespaces is the ListNamespacesOp result.
	Namespaces [][]string
}

func (GetOp) isOp()            {}
func (SearchOp) isOp()         {}
func (PutOp) isOp()            {}
func (ListNamespacesOp) isOp() {}

// Limits and defaults shared by every implementation.
const (
	// DefaultSearchLimit is the page size of a SearchOp with Limit 0.
	DefaultSearchLimit = 10
	// DefaultListLimit is the page size of a ListNamespacesOp with Limit 0.
	DefaultListLimit = 100
	// MaxLimit caps Limit, and MaxOffset caps Offset, so one request cannot
	// ask for an unbounded amount of work.
	MaxLimit  = 10_000
	MaxOffset = 1_000_000
	// NoTTL as PutOp.TTL makes an item permanent even when the store has a
	// default TTL.
	NoTTL time.Duration = -1
)

// NoIndex as PutOp.Index stores an item without embedding anything.
var NoIndex = []string{}

func checkPage(limit, offset, def int) (int, error) {
	if limit < 0 || limit > MaxLimit {
		return 0, fmt.Errorf("%w: limit %d is outside 0..%d", ErrInvalidOp, limit, MaxLimit)
	}
	if offset < 0 || offset > MaxOffset {
		return 0, fmt.Errorf("%w: offset %d is outside 0..%d", ErrInvalidOp, offset, MaxOffset)
	}
	if limit == 0 {
		limit = def
	}
	return limit, nil
}

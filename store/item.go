package store

import "time"

// Item is one stored document.
type Item struct {
	// Namespace is the item's hierarchical folder, e.g. {"users", "alice"}.
	Namespace []string `json:"namespace"`
	// Key is unique within the namespace.
	Key string `json:"key"`
	// Value is the document. Numbers come back as float64, as after any
	// JSON round trip: both implementations store JSON.
	Value map[string]any `json:"value"`
	// CreatedAt is when the item was first put; a re-put keeps it.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the item was last put.
	UpdatedAt time.Time `json:"updated_at"`
}

// SearchItem is an Item returned by a search.
type SearchItem struct {
	Item
	// Score is the cosine similarity of the best-matching embedded field
	// to the query (1 = same direction), or nil when the search had no
	// query.
	Score *float64 `json:"score"`
}

package researchsubgraph

import (
	"context"
	"slices"
	"strings"
	"unicode"
)

// Document is one entry of the team's document library.
type Document struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Searcher finds documents for a query: a search API or a vector index in
// production, a Library here.
type Searcher interface {
	Search(ctx context.Context, query string, limit int) ([]Document, error)
}

// Library is a Searcher over a fixed set of documents. It ranks by the
// query's words found in a document, a title word counting twice, and
// keeps the library's order among equals, so results are deterministic.
type Library []Document

// DefaultLibrary is the library New searches when Options.Searcher is nil:
// notes an engineering team keeps about its storage choices.
var DefaultLibrary = Library{
	{ID: "pg-mvcc", Title: "Postgres concurrency", Text: "Postgres uses MVCC: readers never block writers, and many clients write at once under row-level locks."},
	{ID: "pg-ops", Title: "Running Postgres", Text: "Postgres runs as a separate server that needs provisioning, backups and upgrades, usually as a managed service."},
	{ID: "sqlite-wal", Title: "SQLite concurrency", Text: "SQLite allows many readers but one writer at a time; in WAL mode readers carry on during a write."},
	{ID: "sqlite-embed", Title: "SQLite deployment", Text: "SQLite is a library inside the application: the database is a single file and there is no server to run."},
	{ID: "pgvector", Title: "pgvector", Text: "The pgvector extension adds a vector type and HNSW or IVFFlat nearest-neighbour indexes to Postgres."},
	{ID: "pg-port", Title: "Postgres defaults", Text: "Postgres listens on TCP port 5432 by default."},
}

// Search implements Searcher.
func (l Library) Search(ctx context.Context, query string, limit int) ([]Document, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	words := tokens(query)
	type hit struct {
		doc   Document
		score int
	}
	var hits []hit
	for _, d := range l {
		title, text := tokens(d.Title), tokens(d.Text)
		score := 0
		for _, w := range words {
			if slices.Contains(title, w) {
				score += 2
			}
			if slices.Contains(text, w) {
				score++
			}
		}
		if score > 0 {
			hits = append(hits, hit{d, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score })
	out := make([]Document, 0, min(limit, len(hits)))
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		out = append(out, h.doc)
	}
	return out, nil
}

// tokens are the lower-cased words of s longer than two letters.
func tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) > 2 {
			out = append(out, w)
		}
	}
	return out
}

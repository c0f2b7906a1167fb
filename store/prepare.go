package store

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Prepared is a validated batch, ready for an implementation to execute.
// Both implementations build it with Prepare, so validation, TTL and
// refresh defaults, put de-duplication and embedding are identical.
type Prepared struct {
	// N is the number of ops (and of results).
	N        int
	Gets     []PreparedGet
	Searches []PreparedSearch
	Lists    []PreparedList
	// Puts are de-duplicated by (namespace, key), the last op winning.
	Puts []PreparedPut
}

// PreparedGet is a validated GetOp; Index is its position in the batch.
type PreparedGet struct {
	Index     int
	Namespace []string
	Key       string
	Refresh   bool
}

// PreparedSearch is a validated SearchOp.
type PreparedSearch struct {
	Index         int
	Prefix        []string
	Filter        Filter
	Limit, Offset int
	// HasQuery says the op had a query. QueryVector is then its
	// embedding, or nil when the embedder gave a zero vector, which is
	// similar to nothing: the search returns no items.
	HasQuery    bool
	QueryVector []float32
	Refresh     bool
}

// PreparedList is a validated ListNamespacesOp.
type PreparedList struct {
	Index         int
	Conditions    []MatchCondition
	MaxDepth      int
	Limit, Offset int
}

// PreparedPut is a validated, embedded PutOp.
type PreparedPut struct {
	Namespace []string
	Key       string
	// Value is the normalized document; nil deletes.
	Value map[string]any
	// TTL is resolved against the default: 0 means the item never expires.
	TTL time.Duration
	// IndexSpec is the op's Index as given (nil = store default), kept so
	// a re-embed can redo what the put asked for.
	IndexSpec []string
	// Vectors replace the item's vectors.
	Vectors []FieldVector
}

// FieldVector is one embedded text of an item.
type FieldVector struct {
	Field  string
	Vector []float32
}

// Prepare validates ops and embeds the texts of puts and the queries of
// searches in one Embed call.
func Prepare(ctx context.Context, ops []Op, o Options) (*Prepared, error) {
	p := &Prepared{N: len(ops)}
	refreshDefault := !o.TTL.NoRefreshOnRead
	refresh := func(b *bool) bool {
		if b != nil {
			return *b
		}
		return refreshDefault
	}
	type putKey struct{ ns, key string }
	putAt := map[putKey]int{}
	var texts []string
	type target struct {
		put    int // index in p.Puts, or -1
		search int // index in p.Searches, or -1
		field  string
	}
	var targets []target
	for i, op := range ops {
		switch op := op.(type) {
		case GetOp:
			if err := ValidateNamespace(op.Namespace); err != nil {
				return nil, opError(i, err)
			}
			if err := ValidateKey(op.Key); err != nil {
				return nil, opError(i, err)
			}
			p.Gets = append(p.Gets, PreparedGet{Index: i, Namespace: op.Namespace, Key: op.Key, Refresh: refresh(op.RefreshTTL)})
		case SearchOp:
			// A search prefix is checked like a namespace's labels, but it
			// may be empty (everything) and may start with the reserved
			// root (which simply matches nothing).
			if err := validateLabels(op.NamespacePrefix); err != nil {
				return nil, opError(i, err)
			}
			f, err := ParseFilter(op.Filter)
			if err != nil {
				return nil, opError(i, err)
			}
			limit, err := checkPage(op.Limit, op.Offset, DefaultSearchLimit)
			if err != nil {
				return nil, opError(i, err)
			}
			s := PreparedSearch{Index: i, Prefix: op.NamespacePrefix, Filter: f, Limit: limit, Offset: op.Offset, Refresh: refresh(op.RefreshTTL)}
			if op.Query != "" {
				if o.Index == nil {
					return nil, opError(i, ErrNoIndex)
				}
				s.HasQuery = true
				texts = append(texts, op.Query)
				targets = append(targets, target{put: -1, search: len(p.Searches)})
			}
			p.Searches = append(p.Searches, s)
		case ListNamespacesOp:
			for _, c := range op.MatchConditions {
				if err := validateCondition(c); err != nil {
					return nil, opError(i, err)
				}
			}
			if op.MaxDepth < 0 {
				return nil, opError(i, fmt.Errorf("%w: max depth %d is negative", ErrInvalidOp, op.MaxDepth))
			}
			limit, err := checkPage(op.Limit, op.Offset, DefaultListLimit)
			if err != nil {
				return nil, opError(i, err)
			}
			p.Lists = append(p.Lists, PreparedList{Index: i, Conditions: op.MatchConditions, MaxDepth: op.MaxDepth, Limit: limit, Offset: op.Offset})
		case PutOp:
			put, err := preparePut(op, o)
			if err != nil {
				return nil, opError(i, err)
			}
			k := putKey{JoinNamespace(op.Namespace), op.Key}
			if j, ok := putAt[k]; ok {
				p.Puts[j] = put
			} else {
				putAt[k] = len(p.Puts)
				p.Puts = append(p.Puts, put)
			}
		case nil:
			return nil, opError(i, fmt.Errorf("%w: nil op", ErrInvalidOp))
		default:
			return nil, opError(i, fmt.Errorf("%w: unknown op type %T", ErrInvalidOp, op))
		}
	}
	// Texts of the surviving puts only: an overwritten put is never embedded.
	for j, put := range p.Puts {
		if put.Value == nil {
			continue
		}
		fields := put.IndexSpec
		if fields == nil {
			fields = o.DefaultFields()
		}
		if len(fields) == 0 || o.Index == nil {
			continue
		}
		fts, err := IndexTexts(put.Value, fields)
		if err != nil {
			return nil, err
		}
		for _, ft := range fts {
			texts = append(texts, ft.Text)
			targets = append(targets, target{put: j, search: -1, field: ft.Field})
		}
	}
	if len(texts) == 0 {
		return p, nil
	}
	// Each distinct text is embedded once, however many fields, puts or
	// searches carry it (HTTP embedders are paid per text).
	slot := make([]int, len(texts))
	index := make(map[string]int, len(texts))
	unique := texts[:0:0]
	for i, txt := range texts {
		j, ok := index[txt]
		if !ok {
			j = len(unique)
			index[txt] = j
			unique = append(unique, txt)
		}
		slot[i] = j
	}
	vecs, err := Embed(ctx, o.Index.Embedder, unique)
	if err != nil {
		return nil, err
	}
	for i, t := range targets {
		v := vecs[slot[i]]
		if norm(v) == 0 {
			// A zero vector has no direction: cosine similarity with it is
			// undefined, so it is neither stored nor searched with.
			v = nil
		}
		switch {
		case t.search >= 0:
			p.Searches[t.search].QueryVector = v
		case v != nil:
			p.Puts[t.put].Vectors = append(p.Puts[t.put].Vectors, FieldVector{Field: t.field, Vector: v})
		}
	}
	return p, nil
}

func preparePut(op PutOp, o Options) (PreparedPut, error) {
	if err := ValidateNamespace(op.Namespace); err != nil {
		return PreparedPut{}, err
	}
	if err := ValidateKey(op.Key); err != nil {
		return PreparedPut{}, err
	}
	put := PreparedPut{Namespace: op.Namespace, Key: op.Key, IndexSpec: op.Index}
	if op.Value == nil {
		return put, nil
	}
	v, err := NormalizeValue(op.Value)
	if err != nil {
		return PreparedPut{}, err
	}
	put.Value = v
	for _, f := range op.Index {
		if _, err := ParsePath(f); err != nil {
			return PreparedPut{}, err
		}
	}
	switch {
	case op.TTL == NoTTL:
	case op.TTL == 0:
		put.TTL = o.TTL.Default
	case op.TTL > 0:
		put.TTL = op.TTL
	default:
		return PreparedPut{}, fmt.Errorf("%w: TTL %v is negative (use NoTTL for no expiry)", ErrInvalidOp, op.TTL)
	}
	put.TTL = put.TTL.Truncate(time.Microsecond)
	if op.TTL > 0 && put.TTL == 0 {
		return PreparedPut{}, fmt.Errorf("%w: TTL %v is below a microsecond", ErrInvalidOp, op.TTL)
	}
	return put, nil
}

func opError(i int, err error) error { return fmt.Errorf("op %d: %w", i, err) }

// Embed calls e and checks that it returned one vector of e.Dim() finite
// numbers per text.
func Embed(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrEmbedder, e.Name(), err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", ErrEmbedder, e.Name(), len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != e.Dim() {
			return nil, fmt.Errorf("%w: %s returned a vector of %d numbers, want %d", ErrEmbedder, e.Name(), len(v), e.Dim())
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: %s returned a non-finite number in vector %d", ErrEmbedder, e.Name(), i)
			}
		}
	}
	return vecs, nil
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// CosineSimilarity computes the similarity the way pgvector does (float32
// sums, then a double division), so the memory store ranks like Postgres.
func CosineSimilarity(a, b []float32) float64 {
	var dot, na, nb float32
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	sim := float64(dot) / math.Sqrt(float64(na)*float64(nb))
	sim = max(-1, min(1, sim))
	// pgvector returns the distance 1 - sim, and we report 1 - distance.
	return 1 - (1 - sim)
}

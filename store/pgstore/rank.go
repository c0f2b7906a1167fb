package pgstore

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/superstep-dev/superstep/store"
)

// roundoff bounds how far pgvector's cosine distance and
// store.CosineSimilarity may disagree about one pair of dim-dimensional
// vectors: both sum dim float32 products (the dot product and two norms),
// pgvector in a vectorised order, Go in index order, and each sum may be
// off by about dim·2⁻²⁴ of its magnitude.
func roundoff(dim int) float64 { return 4 * float64(dim) * 0x1p-24 }

// rank scores rows (an item's score is the best store.CosineSimilarity of
// its vectors to the query: the memory store's score, to the last bit)
// and sorts them by score, then namespace, then key, the memory store's
// order. pgvector ranks in float32 with its own rounding, so near-twins
// (vectors equal but for rounding) come out of SQL in an order that
// depends on it; ranking here makes the order, and so offset pages, the
// same on every path and every backend.
func rank(rows []scored, qv []float32) {
	for i := range rows {
		rows[i].score = math.Inf(-1)
		for _, v := range rows[i].vecs {
			if len(v) == len(qv) {
				rows[i].score = max(rows[i].score, store.CosineSimilarity(qv, v))
			}
		}
	}
	slices.SortFunc(rows, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := strings.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
}

// window is the part of pgvector's order of the items a search finds
// (by distance, then namespace, then key) that it reads and ranks (see
// rank): its page, ranks offset+1 to offset+limit, with front and back
// slack on either side, since the exact scores reorder only items whose
// distances are within rounding of each other. The read also takes the
// item just before (rank lo, when lo > 0) and just after (rank end)
// as sentinels: every item outside is at least as near as the front one,
// or as far as the back one, so when those are farther than rounding from
// every item of the ranked page, nothing outside can move into it; else
// that side's slack widens. So a search sends and ranks its page's items
// and their slack whatever its offset, not every item before it (the
// server still passes over those).
type window struct {
	offset, limit int
	front, back   int
}

func newWindow(sr store.PreparedSearch) window {
	return window{offset: sr.Offset, limit: sr.Limit, front: 8, back: 8}
}

// end is the rank of the back sentinel, the last item the window reads.
func (w window) end() int { return w.offset + w.limit + w.back + 1 }

// lo is the number of items before the window.
func (w window) lo() int { return max(w.offset-w.front, 0) }

// sqlOffset and sqlLimit read the window with its sentinels.
func (w window) sqlOffset() int { return max(w.lo()-1, 0) }
func (w window) sqlLimit() int  { return w.end() - w.sqlOffset() }

// windowClause marks where a search's SQL reads its window (clause).
const windowClause = "/* window */"

// clause puts in sql, for windowClause, the LIMIT and OFFSET that read
// the window, as parameters after q's. A window at the start reads
// without OFFSET: with an OFFSET parameter the server plans every
// execution (its generic plan cannot see the offset), about a tenth of
// an exact search.
func (w window) clause(sql string, q *query) (string, []any) {
	args := slices.Clip(q.args)
	n := len(args)
	args = append(args, w.sqlLimit())
	c := "LIMIT $" + strconv.Itoa(n+1)
	if off := w.sqlOffset(); off > 0 {
		args = append(args, off)
		c += " OFFSET $" + strconv.Itoa(n+2)
	}
	return strings.Replace(sql, windowClause, c, 1), args
}

// settle takes what sqlOffset and sqlLimit read, in pgvector's order,
// ranks the window and returns the page, or ok false when a sentinel is
// within eps (two roundings) of an item of the page and that side was
// widened for another read. open says the back sentinel was read: there
// are items beyond the window.
func (w *window) settle(rows []scored, qv []float32) (page []scored, open, ok bool) {
	eps := 2 * roundoff(len(qv))
	lo := w.lo()
	open = len(rows) == w.sqlLimit()
	win := rows
	var front, back *scored
	if lo > 0 {
		if len(win) == 0 {
			return nil, false, true // fewer than lo items: the page is empty
		}
		front, win = &win[0], win[1:]
	}
	if open && len(win) > 0 {
		back, win = &win[len(win)-1], win[:len(win)-1]
	}
	rank(win, qv)
	from := w.offset - lo
	if from >= len(win) {
		return nil, open, true
	}
	page = win[from:min(from+w.limit, len(win))]
	near, far := math.Inf(1), math.Inf(-1)
	for _, r := range page {
		near, far = min(near, r.dist), max(far, r.dist)
	}
	if front != nil && front.dist+eps >= near {
		w.front *= 4
		return nil, open, false
	}
	if back != nil && back.dist <= far+eps {
		w.back *= 4
		return nil, open, false
	}
	return page, open, true
}

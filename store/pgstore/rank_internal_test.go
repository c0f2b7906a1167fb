package pgstore

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/superstep-dev/superstep/store"
)

// TestWindowSettle drives window.settle with rows as SQL would read them
// (pgvector's order and distances) for a 2-d query, where an item's exact
// score is the cosine of its angle: the page it returns, or the side it
// widens when a sentinel is within rounding of the page.
func TestWindowSettle(t *testing.T) {
	t.Parallel()
	qv := []float32{1, 0}
	eps := 2 * roundoff(len(qv))
	// row is item key at pgvector distance d, its vector at the angle
	// whose cosine is 1-d-skew: skew moves the exact score off pgvector's.
	row := func(key string, d, skew float64) scored {
		a := math.Acos(1 - d - skew)
		return scored{prefix: "ns", key: key, dist: d, vecs: [][]float32{{float32(math.Cos(a)), float32(math.Sin(a))}}}
	}
	// spaced is n rows from rank first, 0.01 apart.
	spaced := func(first, n int) []scored {
		var rows []scored
		for i := range n {
			r := first + i
			rows = append(rows, row(fmt.Sprintf("k%03d", r), 0.01*float64(r), 0))
		}
		return rows
	}
	keys := func(rows []scored) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.key)
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		offset, limit int
		rows          func(w window) []scored
		want          []string // the page, when settled
		open          bool
		front, back   int // the slack after settle, when it widens
	}{
		{name: "first page", offset: 0, limit: 2,
			rows: func(w window) []scored { return spaced(1, w.sqlLimit()) },
			want: []string{"k001", "k002"}, open: true},
		{name: "fewer items than the window", offset: 0, limit: 5,
			rows: func(window) []scored { return spaced(1, 3) },
			want: []string{"k001", "k002", "k003"}},
		{name: "deep page reads from its front sentinel", offset: 20, limit: 3,
			rows: func(w window) []scored { return spaced(w.sqlOffset()+1, w.sqlLimit()) },
			want: []string{"k021", "k022", "k023"}, open: true},
		{name: "front sentinel at rank 1", offset: 9, limit: 2,
			rows: func(w window) []scored { return spaced(w.sqlOffset()+1, w.sqlLimit()) },
			want: []string{"k010", "k011"}, open: true},
		{name: "offset past the items", offset: 20, limit: 3,
			rows: func(window) []scored { return nil },
			want: nil},
		{name: "offset past the window's items", offset: 20, limit: 3,
			rows: func(w window) []scored { return spaced(w.sqlOffset()+1, 5) },
			want: nil},
		{name: "exact scores reorder a pgvector tie", offset: 0, limit: 2,
			rows: func(w window) []scored {
				rows := spaced(1, w.sqlLimit())
				rows[0], rows[1] = row("k000", 0.01, 1e-4), row("k001", 0.01, 0)
				return rows
			},
			want: []string{"k001", "k000"}, open: true},
		{name: "exact scores move a slack item into the page", offset: 0, limit: 2,
			rows: func(w window) []scored {
				rows := spaced(1, w.sqlLimit())
				rows[1] = row("k002", 0.02, 0.05) // scores below k003
				return rows
			},
			want: []string{"k001", "k003"}, open: true},
		{name: "back sentinel within rounding of the page", offset: 0, limit: 2,
			rows: func(w window) []scored {
				rows := spaced(1, w.sqlLimit())
				for i := 2; i < len(rows); i++ {
					rows[i].dist = rows[1].dist + eps/2
				}
				return rows
			},
			front: 8, back: 32},
		{name: "front sentinel within rounding of the page", offset: 20, limit: 3,
			rows: func(w window) []scored {
				rows := spaced(w.sqlOffset()+1, w.sqlLimit())
				for i := range rows[:13] {
					rows[i].dist = rows[13].dist - eps/2
				}
				return rows
			},
			front: 32, back: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(store.PreparedSearch{Offset: tc.offset, Limit: tc.limit})
			page, open, ok := w.settle(tc.rows(w), qv)
			if tc.front != 0 {
				if ok || w.front != tc.front || w.back != tc.back {
					t.Fatalf("settle = %v, ok %v, slack %d/%d; want a widening to %d/%d", keys(page), ok, w.front, w.back, tc.front, tc.back)
				}
				return
			}
			if !ok || !slices.Equal(keys(page), tc.want) || open != tc.open {
				t.Errorf("settle = %v, open %v, ok %v; want %v, open %v", keys(page), open, ok, tc.want, tc.open)
			}
		})
	}
}

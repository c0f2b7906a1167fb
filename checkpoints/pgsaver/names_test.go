package pgsaver

import (
	"fmt"
	"slices"
	"testing"
)

// TestNameListsAcrossChunks: lists that do not fit in what is left of a
// chunk move whole to a fresh one (lists longer than a chunk included),
// and every list handed out keeps its names, after more are read and
// after a list read in part is forgotten (truncate).
func TestNameListsAcrossChunks(t *testing.T) {
	t.Parallel()
	l := newNameLists(1) // chunks of 8 names
	var got, want [][]string
	for row := range 40 {
		mark := l.mark()
		l.begin()
		var names []string
		for i := range row % 11 { // up to 10 names: more than a chunk
			name := fmt.Sprintf("r%d-%d", row, i)
			names = append(names, name)
			l.add(name)
		}
		if row%7 == 3 {
			l.truncate(mark) // a row whose list is thrown away
			continue
		}
		got, want = append(got, l.list()), append(want, names)
	}
	for i := range got {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("list %d is %q, want %q", i, got[i], want[i])
		}
	}
}

package pgsaver

// A listing's rows repeat most of their strings (thread, namespace,
// channel and node names, metadata keys and values, the previous row's
// parent id), so a listing allocates each once: through names when it is
// one of many, through share when it is the previous row's. What is each
// row's own (its parent id, its lists of names) it allocates a chunk at a
// time: a slab of bytes (internal/slab) and nameLists.

// names interns the strings a listing's rows repeat (channels, nodes,
// metadata keys): each is allocated once a listing.
type names map[string]string

// maxNames bounds a listing's names; past it strings are not interned.
const maxNames = 1024

func (n names) get(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(n) < maxNames {
		n[s] = s
	}
	return s
}

// share returns b as a string, prev itself when it holds the same bytes.
func share(b []byte, prev string) string {
	if string(b) == prev {
		return prev
	}
	return string(b)
}

// idLen is the length of a checkpoint id as the engine makes it (a UUID),
// by which a listing sizes its slab of ids.
const idLen = 36

// nameLists holds the name lists (Next, UpdatedChannels) of a listing's
// rows in chunks: a row's list is a slice of a chunk capped at its end, so
// each tuple's lists are its own (an append copies; a change of an
// element changes its tuple's only), and a page's lists cost an
// allocation or two, not one a row. A chunk is filled, never grown: a
// list that does not fit moves to a fresh one, so a tuple kept pins one
// chunk, not the listing's lists. A page without lists allocates nothing.
type nameLists struct {
	buf   []string
	start int // where the list being read begins in buf
	size  int // a chunk's names
}

// newNameLists returns the lists of a listing of about rows rows.
func newNameLists(rows int) nameLists { return nameLists{size: min(max(2*rows, 8), 1024)} }

// begin starts a list.
func (l *nameLists) begin() { l.start = len(l.buf) }

// add appends s to the list being read.
func (l *nameLists) add(s string) {
	if len(l.buf) == cap(l.buf) {
		n := len(l.buf) - l.start
		buf := make([]string, n, max(l.size, 2*n))
		copy(buf, l.buf[l.start:])
		l.buf, l.start = buf, 0
	}
	l.buf = append(l.buf, s)
}

// list returns the list read since begin.
func (l *nameLists) list() []string { return l.buf[l.start:len(l.buf):len(l.buf)] }

// mark is where the next list begins, for truncate.
func (l *nameLists) mark() int { return len(l.buf) }

// truncate forgets the lists read since mark, which no tuple holds any
// more. In a chunk begun since mark it forgets what it can: that chunk
// holds only lists read since mark.
func (l *nameLists) truncate(mark int) {
	if mark < len(l.buf) {
		l.buf = l.buf[:mark]
	}
}

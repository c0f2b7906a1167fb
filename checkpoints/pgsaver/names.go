package pgsaver

import "strings"

// A listing's rows repeat most of their strings (thread, namespace,
// channel and node names, metadata keys and values, the previous row's
// parent id), so a listing allocates each once: through names when it is
// one of many, through share when it is the previous row's.

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

// pageStrings makes a page's strings of one kind (its rows' parent ids)
// in one buffer: a page of 50 ids is one allocation, not 50. A string
// made stays as it is (the buffer is only appended to, and a bigger one
// leaves the old to the strings made in it).
type pageStrings struct{ b strings.Builder }

// string returns b as a string; the first makes room for rows strings
// of b's length.
func (p *pageStrings) string(b []byte, rows int) string {
	if p.b.Cap() == 0 {
		p.b.Grow(len(b) * max(rows, 1))
	}
	start := p.b.Len()
	p.b.Write(b)
	return p.b.String()[start:]
}

package pgsaver

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

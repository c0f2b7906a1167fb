// Package textcut shortens text to a byte budget without splitting a
// UTF-8 sequence: previews of values, run errors kept in the registry and
// rejected input quoted in an error message all cut text this way, and a
// cut in the middle of a rune would show a person a replacement character
// (or make Postgres refuse the text).
package textcut

import "unicode/utf8"

// Cut returns the longest prefix of s of at most n bytes that ends on a
// rune boundary; s itself when it fits. Only the byte at the cut is
// looked at, so invalid UTF-8 before it is kept as it is. A negative n
// is 0.
func Cut[T ~string | ~[]byte](s T, n int) T {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

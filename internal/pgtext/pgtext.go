// Package pgtext checks strings for what Postgres refuses in text and jsonb
// values: invalid UTF-8 and the NUL character. Every backend checks its
// input with it, so the memory and Postgres implementations refuse the
// same strings with the same words.
package pgtext

import (
	"strings"
	"unicode/utf8"
)

// Problem says why Postgres cannot store s as text, or "" when it can.
// Plain ASCII, the common case, is checked in one pass.
func Problem(s string) string {
	i := plainRun(s)
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == 0:
			return "contains a NUL byte, which Postgres cannot store"
		case c >= utf8.RuneSelf:
			rest := s[i:]
			if !utf8.ValidString(rest) {
				return "is not valid UTF-8"
			}
			if strings.IndexByte(rest, 0) >= 0 {
				return "contains a NUL byte, which Postgres cannot store"
			}
			return ""
		}
	}
	return ""
}

// plainRun is how many of s's leading bytes, a multiple of eight, are
// plain ASCII without NUL, read eight at a time: Problem checks every
// channel, node and task name of every superstep.
func plainRun(s string) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	n := 0
	for ; len(s) >= 8; s, n = s[8:], n+8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		// A zero byte borrows into its high bit; a byte at or above
		// utf8.RuneSelf has it set already.
		if ((w-ones)|w)&highs != 0 {
			break
		}
	}
	return n
}

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
	for i := 0; i < len(s); i++ {
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

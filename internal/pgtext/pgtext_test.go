package pgtext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/superstep-dev/superstep/internal/pgtext"
)

func TestProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ s, want string }{
		{"", ""},
		{"plain-ascii_1", ""},
		{"héllo wörld", ""},
		{"a\x00b", "contains a NUL byte, which Postgres cannot store"},
		{"é\x00", "contains a NUL byte, which Postgres cannot store"},
		{"\xff", "is not valid UTF-8"},
		{"ok\xc3", "is not valid UTF-8"},
	} {
		if got := pgtext.Problem(c.s); got != c.want {
			t.Errorf("Problem(%q) = %q, want %q", c.s, got, c.want)
		}
	}
}

// reference is Problem read byte by byte: the first NUL or non-ASCII
// byte decides, and after a non-ASCII one the rest must be valid UTF-8,
// then free of NUL.
func reference(s string) string {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0:
			return "contains a NUL byte, which Postgres cannot store"
		case s[i] >= utf8.RuneSelf && !utf8.ValidString(s[i:]):
			return "is not valid UTF-8"
		case s[i] >= utf8.RuneSelf && strings.IndexByte(s[i:], 0) >= 0:
			return "contains a NUL byte, which Postgres cannot store"
		case s[i] >= utf8.RuneSelf:
			return ""
		}
	}
	return ""
}

// A NUL, a stray byte or a valid non-ASCII letter is found wherever it
// stands: in the first eight bytes, in a later eight, or in the tail that
// is read byte by byte.
func TestProblemAtEveryPosition(t *testing.T) {
	t.Parallel()
	plain := "abcdefghijklmnopqrstuvwxyz"
	for _, odd := range []string{"\x00", "\xff", "\x80", "é", "\x7f"} {
		for i := range len(plain) + 1 {
			s := plain[:i] + odd + plain[i:]
			if got, want := pgtext.Problem(s), reference(s); got != want {
				t.Errorf("Problem(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

func FuzzProblem(f *testing.F) {
	for _, s := range []string{"", "plain-ascii_1", "0123456789abcdef\x00", "0123456789\xc3", "héllo wörld, héllo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := pgtext.Problem(s), reference(s); got != want {
			t.Errorf("Problem(%q) = %q, want %q", s, got, want)
		}
	})
}

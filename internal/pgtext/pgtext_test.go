package pgtext_test

import (
	"testing"

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

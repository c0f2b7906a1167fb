package textcut_test

import (
	"testing"

	"github.com/superstep-dev/superstep/internal/textcut"
)

func TestCut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"fits", "héllo", 6, "héllo"},
		{"ascii", "hello", 3, "hel"},
		{"inside a two-byte rune", "hé", 2, "h"},
		{"after a two-byte rune", "hé!", 3, "hé"},
		{"inside a four-byte rune", "a😀b", 4, "a"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"only continuation bytes", "\x80\x80\x80", 2, ""},
		{"empty", "", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := textcut.Cut(tc.s, tc.n); got != tc.want {
				t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
			if got := string(textcut.Cut([]byte(tc.s), tc.n)); got != tc.want {
				t.Errorf("Cut([]byte(%q), %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
		})
	}
}

package pgsaver

import "testing"

// TestPlainRun: plainRun skips whole words of plain string bytes and
// stops at the word holding the first byte a string's loop must look at
// (a quote, a backslash, a control character, a byte not ASCII), wherever
// in the word it is and whatever the other bytes are.
func TestPlainRun(t *testing.T) {
	t.Parallel()
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	want := func(b []byte) int {
		n := 0
		for ; len(b)-n >= 8; n += 8 {
			for _, c := range b[n : n+8] {
				if !plain(c) {
					return n
				}
			}
		}
		return n
	}
	base := []byte("0123456789abcdefghijklmnopqrstuv") // 32 plain bytes
	for _, size := range []int{0, 7, 8, 9, 16, 23, 32} {
		for pos := range size {
			for c := range 256 {
				b := append([]byte(nil), base[:size]...)
				b[pos] = byte(c)
				if got, w := plainRun(b), want(b); got != w {
					t.Fatalf("plainRun(%q) = %d, want %d", b, got, w)
				}
			}
		}
		if got := plainRun(base[:size]); got != size/8*8 {
			t.Fatalf("plainRun(%q) = %d, want %d", base[:size], got, size/8*8)
		}
	}
	// Bytes either side of the limits, together in one word.
	for _, w := range []string{"\x1f\x20\x21\x22\x5b\x5c\x5d\x7f", "\x7f\x80\x20\x20\x20\x20\x20\x20", "        ", "~~~~~~~~", "\xff\xff\xff\xff\xff\xff\xff\xff"} {
		if got, want := plainRun([]byte(w)), want([]byte(w)); got != want {
			t.Errorf("plainRun(%q) = %d, want %d", w, got, want)
		}
	}
}

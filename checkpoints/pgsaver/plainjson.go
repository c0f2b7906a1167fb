package pgsaver

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// plainJSON reads JSON text made of plain pieces: strings without escapes
// (valid UTF-8, no control characters), numbers, true, false, null, and
// objects and arrays of them. A value it reads whole (value) may also
// hold strings with escapes, which it only checks for their form: such a
// value's text goes on to encoding/json. Bodies as this package writes
// them and metadata as Postgres prints jsonb are such text, and reading
// it by hand costs a fraction of a tokenizer's time. At the first piece
// it cannot read (or that is not valid JSON) ok turns false and stays
// so, and the caller decodes the whole text afresh with the JSON
// libraries instead. So what it reads while ok holds is exactly what
// encoding/json reads; what a read returns once ok is false means
// nothing.
type plainJSON struct {
	b       []byte
	i       int
	ok      bool
	escaped bool // the last string value read (text) held escapes
}

func (r *plainJSON) reset(b []byte) { r.b, r.i, r.ok = b, 0, true }

func (r *plainJSON) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c when it comes next.
func (r *plainJSON) next(c byte) bool {
	r.space()
	if r.ok && r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// must is next when c has to come next.
func (r *plainJSON) must(c byte) {
	if !r.next(c) {
		r.ok = false
	}
}

// lit consumes s when it comes next.
func (r *plainJSON) lit(s string) bool {
	r.space()
	if r.ok && bytes.HasPrefix(r.b[r.i:], []byte(s)) {
		r.i += len(s)
		return true
	}
	return false
}

// str reads a plain string and returns its contents.
func (r *plainJSON) str() []byte {
	r.space()
	if !r.ok || r.i >= len(r.b) || r.b[r.i] != '"' {
		r.ok = false
		return nil
	}
	start, ascii := r.i+1, true
	for j := start + plainRun(r.b[start:]); j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			if s := r.b[start:j]; ascii || utf8.Valid(s) {
				r.i = j + 1
				return s
			}
			r.ok = false
			return nil
		case c < 0x20 || c == '\\':
			r.ok = false
			return nil
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	r.ok = false
	return nil
}

// text reads a string that may hold escapes, as value does, checking
// them for their form only: its text goes on to encoding/json, which
// unescapes it. Unlike str, it is not on the path of the text this
// package writes, so it keeps str's loop fast by being its own.
func (r *plainJSON) text() {
	start, ascii := r.i+1, true
	r.escaped = false
	for j := start + plainRun(r.b[start:]); j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			if ascii || utf8.Valid(r.b[start:j]) {
				r.i = j + 1
				return
			}
			r.ok = false
			return
		case c == '\\':
			r.escaped = true
			if j+1 < len(r.b) && bytes.IndexByte([]byte(`"\\/bfnrt`), r.b[j+1]) >= 0 {
				j++
				continue
			}
			if j+5 < len(r.b) && r.b[j+1] == 'u' && isHex(r.b[j+2:j+6]) {
				j += 5
				continue
			}
			r.ok = false
			return
		case c < 0x20:
			r.ok = false
			return
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	r.ok = false
}

// plainRun returns how many bytes b begins with, a multiple of 8, that
// are inside a string and need no look: ASCII, no control character, no
// quote, no backslash. It tests eight bytes at a time (the classic "has a
// zero byte" and "has a byte less than n" word tricks, exact as to
// whether a word holds one), so a string's loop looks byte by byte only
// at the last word, where its end is: ids and times, the longest strings
// of a listing's rows, took it most of a header's time a byte at a time.
func plainRun(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	n := 0
	for ; len(b)-n >= 8; n += 8 {
		w := binary.LittleEndian.Uint64(b[n:])
		q, bs := w^('"'*ones), w^('\\'*ones)
		// A byte below 0x20, a zero byte of q or bs (a quote or a
		// backslash in w), or a byte with its high bit set (not ASCII).
		if (w-0x20*ones)&^w&highs|(q-ones)&^q&highs|(bs-ones)&^bs&highs|w&highs != 0 {
			break
		}
	}
	return n
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// quoted reads a plain string and returns it with its quotes.
func (r *plainJSON) quoted() []byte {
	r.space()
	start := r.i
	if r.str(); !r.ok {
		return nil
	}
	return r.b[start:r.i]
}

// key reads an object member's name and the colon after it.
func (r *plainJSON) key() []byte {
	k := r.str()
	r.must(':')
	return k
}

// integer reads a number without fraction or exponent that fits an int.
func (r *plainJSON) integer() int {
	r.space()
	start := r.i
	r.number()
	n := r.b[start:r.i]
	if !r.ok || bytes.ContainsAny(n, ".eE") {
		r.ok = false
		return 0
	}
	v, err := strconv.Atoi(string(n))
	if err != nil {
		r.ok = false
	}
	return v
}

// number reads a JSON number.
func (r *plainJSON) number() {
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	first := r.i
	if n := digits(); n == 0 || n > 1 && r.b[first] == '0' {
		r.ok = false
		return
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			r.ok = false
			return
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			r.ok = false
		}
	}
}

// plainString returns the contents of v, the value just read, when it is
// a string without escapes: then its bytes are the string's.
func (r *plainJSON) plainString(v []byte) ([]byte, bool) {
	if v[0] != '"' || r.escaped {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// maxPlainDepth is how deep value reads nested objects and arrays; deeper
// text is left to encoding/json.
const maxPlainDepth = 32

// value reads one value and returns its text.
func (r *plainJSON) value() []byte {
	r.space()
	start := r.i
	r.skip(0)
	if !r.ok {
		return nil
	}
	return r.b[start:r.i]
}

func (r *plainJSON) skip(depth int) {
	if !r.ok || depth > maxPlainDepth || r.i >= len(r.b) {
		r.ok = false
		return
	}
	switch c := r.b[r.i]; {
	case c == '"':
		r.text()
	case c == '-' || c >= '0' && c <= '9':
		r.number()
	case c == '{':
		r.i++
		if r.next('}') {
			return
		}
		for r.ok {
			r.key()
			r.space()
			r.skip(depth + 1)
			if r.next('}') {
				return
			}
			r.must(',')
		}
	case c == '[':
		r.i++
		if r.next(']') {
			return
		}
		for r.ok {
			r.space()
			r.skip(depth + 1)
			if r.next(']') {
				return
			}
			r.must(',')
		}
	case r.lit("true"), r.lit("false"), r.lit("null"):
	default:
		r.ok = false
	}
}

// end reports whether the text ends here, after whitespace, and all of
// it was plain.
func (r *plainJSON) end() bool {
	r.space()
	return r.ok && r.i == len(r.b)
}

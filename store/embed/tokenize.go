package embed

import (
	"unicode"
	"unicode/utf8"
)

// tokenizer splits text into lowercased runs of letters and digits, the
// tokenisation both offline embedders share. Everything else (spaces,
// punctuation, symbols) separates tokens, so "don't" is "don" and "t" and
// "e-mail" is "e" and "mail": crude, but it matches how the GloVe
// vocabulary is filtered by cmd/glove-convert, so no kept word is
// unreachable.
//
// It reuses one buffer, so the token returned by next is only valid until
// the following call. Tokenising allocates nothing once the buffer has
// grown to the longest token.
type tokenizer struct {
	s   string
	i   int
	buf []byte
}

func newTokenizer(s string, buf []byte) tokenizer {
	return tokenizer{s: s, buf: buf[:0]}
}

// next returns the next token, or ok=false at the end of the text.
func (t *tokenizer) next() (tok []byte, ok bool) {
	t.buf = t.buf[:0]
	for t.i < len(t.s) {
		c := t.s[t.i]
		if c < utf8.RuneSelf {
			t.i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				t.buf = append(t.buf, c)
				continue
			case 'A' <= c && c <= 'Z':
				t.buf = append(t.buf, c+('a'-'A'))
				continue
			}
		} else {
			r, size := utf8.DecodeRuneInString(t.s[t.i:])
			t.i += size
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				t.buf = utf8.AppendRune(t.buf, unicode.ToLower(r))
				continue
			}
		}
		if len(t.buf) > 0 {
			return t.buf, true
		}
	}
	return t.buf, len(t.buf) > 0
}

// IsToken reports whether w is exactly one token as the offline embedders
// tokenise text: non-empty, lowercase, letters and digits only. Word-vector
// files may hold only such words, since no other word could be looked up.
func IsToken(w string) bool {
	tk := newTokenizer(w, nil)
	tok, ok := tk.next()
	if !ok || string(tok) != w {
		return false
	}
	_, more := tk.next()
	return !more
}

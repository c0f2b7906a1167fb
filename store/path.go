package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Path limits: a path string's length, its number of steps (counting
// inside braces), brace nesting, and how many values one path may match
// in one document (each match becomes a vector).
const (
	MaxPathBytes   = 512
	MaxPathSteps   = 32
	MaxPathNesting = 4
	MaxPathMatches = 1000
)

// pathSpecial are the characters that must be escaped with "\" inside a
// field name.
const pathSpecial = `.[]{},*\$`

type stepKind uint8

const (
	stepField    stepKind = iota // .name
	stepWildcard                 // .* : every object value or array element
	stepIndex                    // [i], negative counts from the end
	stepAll                      // [*] : every array element
	stepAlts                     // {p1,p2}: each relative path in turn
)

type step struct {
	kind  stepKind
	name  string
	index int
	alts  []Path
}

// Path is a parsed index field path: which parts of a document are
// embedded. See ParsePath.
type Path struct {
	root  bool // "$": the whole document
	steps []step
}

// ParsePath parses an index field path:
//
//	$              the whole document
//	a.b            field b of field a
//	a[0], a[-1]    first / last array element
//	a[*]           every array element
//	a.*, *         every value of an object (in key order) or array
//	x[*].y         field y of every element of x
//	{a,b.c}        each of the alternatives, in order; also after a dot:
//	               meta.{title,summary}
//
// A field name containing one of . [ ] { } , * \ $ escapes it with "\".
func ParsePath(s string) (Path, error) {
	if len(s) > MaxPathBytes {
		return Path{}, fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidPath, len(s), MaxPathBytes)
	}
	if s == "$" {
		return Path{root: true}, nil
	}
	p := &pathParser{s: s}
	path, err := p.seq(0)
	if err == nil && p.i < len(s) {
		err = p.errorf("unexpected %q", s[p.i])
	}
	if err == nil && p.steps > MaxPathSteps {
		err = fmt.Errorf("%w: %q has %d steps, at most %d allowed", ErrInvalidPath, s, p.steps, MaxPathSteps)
	}
	if err != nil {
		return Path{}, err
	}
	return path, nil
}

type pathParser struct {
	s     string
	i     int
	steps int
}

func (p *pathParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %q at offset %d: %s", ErrInvalidPath, p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *pathParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// seq parses one path up to the end, a "," or a "}".
func (p *pathParser) seq(depth int) (Path, error) {
	var path Path
	first := true
	for {
		c := p.peek()
		if p.i == len(p.s) || c == ',' || c == '}' {
			if first {
				return path, p.errorf("empty path")
			}
			return path, nil
		}
		p.steps++
		if p.steps > MaxPathSteps {
			return path, p.errorf("more than %d steps", MaxPathSteps)
		}
		switch {
		case c == '[':
			st, err := p.bracket()
			if err != nil {
				return path, err
			}
			path.steps = append(path.steps, st)
		case c == '.' && !first:
			p.i++
			st, err := p.member(depth)
			if err != nil {
				return path, err
			}
			path.steps = append(path.steps, st)
		case first:
			st, err := p.member(depth)
			if err != nil {
				return path, err
			}
			path.steps = append(path.steps, st)
		default:
			return path, p.errorf("expected \".\", \"[\" or the end, got %q", c)
		}
		first = false
	}
}

// member parses what may follow a dot: a name, "*" or "{…}".
func (p *pathParser) member(depth int) (step, error) {
	switch p.peek() {
	case '*':
		p.i++
		return step{kind: stepWildcard}, nil
	case '{':
		if depth+1 > MaxPathNesting {
			return step{}, p.errorf("braces nest deeper than %d", MaxPathNesting)
		}
		p.i++
		var alts []Path
		for {
			alt, err := p.seq(depth + 1)
			if err != nil {
				return step{}, err
			}
			alts = append(alts, alt)
			switch p.peek() {
			case ',':
				p.i++
				continue
			case '}':
				p.i++
				return step{kind: stepAlts, alts: alts}, nil
			}
			return step{}, p.errorf("unclosed \"{\"")
		}
	}
	var name strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' {
			if p.i+1 == len(p.s) || !strings.ContainsRune(pathSpecial, rune(p.s[p.i+1])) {
				return step{}, p.errorf("a backslash must escape one of %s", pathSpecial)
			}
			name.WriteByte(p.s[p.i+1])
			p.i += 2
			continue
		}
		if strings.IndexByte(pathSpecial, c) >= 0 {
			break
		}
		name.WriteByte(c)
		p.i++
	}
	if name.Len() == 0 {
		return step{}, p.errorf("expected a field name")
	}
	return step{kind: stepField, name: name.String()}, nil
}

func (p *pathParser) bracket() (step, error) {
	p.i++ // [
	end := strings.IndexByte(p.s[p.i:], ']')
	if end < 0 {
		return step{}, p.errorf("unclosed \"[\"")
	}
	inner := p.s[p.i : p.i+end]
	p.i += end + 1
	if inner == "*" {
		return step{kind: stepAll}, nil
	}
	n, err := strconv.Atoi(inner)
	if err != nil || inner != strconv.Itoa(n) || n > 1<<20 || n < -(1<<20) {
		return step{}, p.errorf("%q is not \"*\" or an array index", inner)
	}
	return step{kind: stepIndex, index: n}, nil
}

// String prints the path in the syntax ParsePath reads.
func (p Path) String() string {
	if p.root {
		return "$"
	}
	var b strings.Builder
	writeSteps(&b, p.steps)
	return b.String()
}

func writeSteps(b *strings.Builder, steps []step) {
	for i, st := range steps {
		if i > 0 && st.kind != stepIndex && st.kind != stepAll {
			b.WriteByte('.')
		}
		switch st.kind {
		case stepField:
			for j := 0; j < len(st.name); j++ {
				if strings.IndexByte(pathSpecial, st.name[j]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(st.name[j])
			}
		case stepWildcard:
			b.WriteByte('*')
		case stepIndex:
			fmt.Fprintf(b, "[%d]", st.index)
		case stepAll:
			b.WriteString("[*]")
		case stepAlts:
			b.WriteByte('{')
			for j, a := range st.alts {
				if j > 0 {
					b.WriteByte(',')
				}
				writeSteps(b, a.steps)
			}
			b.WriteByte('}')
		}
	}
}

// Select returns the values the path matches in doc, in document order
// (object keys sorted). It fails when more than MaxPathMatches values
// would be produced at any step.
func (p Path) Select(doc any) ([]any, error) {
	if p.root {
		return []any{doc}, nil
	}
	return selectSteps([]any{doc}, p.steps)
}

func selectSteps(cur []any, steps []step) ([]any, error) {
	for _, st := range steps {
		var next []any
		for _, v := range cur {
			switch st.kind {
			case stepField:
				if m, ok := v.(map[string]any); ok {
					if e, ok := m[st.name]; ok {
						next = append(next, e)
					}
				}
			case stepWildcard:
				switch v := v.(type) {
				case map[string]any:
					keys := make([]string, 0, len(v))
					for k := range v {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					for _, k := range keys {
						next = append(next, v[k])
					}
				case []any:
					next = append(next, v...)
				}
			case stepIndex:
				if a, ok := v.([]any); ok {
					i := st.index
					if i < 0 {
						i += len(a)
					}
					if i >= 0 && i < len(a) {
						next = append(next, a[i])
					}
				}
			case stepAll:
				if a, ok := v.([]any); ok {
					next = append(next, a...)
				}
			case stepAlts:
				for _, alt := range st.alts {
					got, err := selectSteps([]any{v}, alt.steps)
					if err != nil {
						return nil, err
					}
					next = append(next, got...)
				}
			}
			if len(next) > MaxPathMatches {
				return nil, fmt.Errorf("%w: matches more than %d values", ErrInvalidPath, MaxPathMatches)
			}
		}
		cur = next
	}
	return cur, nil
}

// Texts returns the text of each value the path matches: strings as they
// are, numbers and booleans in JSON form, objects and arrays as compact
// JSON with sorted keys; nulls are skipped.
func (p Path) Texts(doc any) ([]string, error) {
	vals, err := p.Select(doc)
	if err != nil {
		return nil, err
	}
	texts := make([]string, 0, len(vals))
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
		case string:
			texts = append(texts, v)
		default:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				return nil, fmt.Errorf("%w: encode matched value: %v", ErrInvalidValue, err)
			}
			texts = append(texts, strings.TrimSuffix(buf.String(), "\n"))
		}
	}
	return texts, nil
}

// FieldText is one text to embed and the field name its vector is stored
// under.
type FieldText struct {
	Field string
	Text  string
}

// IndexTexts extracts the texts to embed from doc for each path: the field
// name is the path as written when it matches one value, else the path
// followed by ".0", ".1", ….
func IndexTexts(doc map[string]any, paths []string) ([]FieldText, error) {
	var out []FieldText
	seen := map[string]bool{}
	add := func(field, text string) {
		// Two paths can print the same field name ("a" matching twice
		// gives "a.0", and "a.0" may be listed too): the first one wins.
		if !seen[field] {
			seen[field] = true
			out = append(out, FieldText{Field: field, Text: text})
		}
	}
	for _, raw := range paths {
		p, err := ParsePath(raw)
		if err != nil {
			return nil, err
		}
		texts, err := p.Texts(doc)
		if err != nil {
			return nil, fmt.Errorf("path %q: %w", raw, err)
		}
		if len(out)+len(texts) > MaxPathMatches {
			return nil, fmt.Errorf("%w: the index paths match more than %d values", ErrInvalidPath, MaxPathMatches)
		}
		if len(texts) == 1 {
			add(raw, texts[0])
			continue
		}
		for i, t := range texts {
			add(raw+"."+strconv.Itoa(i), t)
		}
	}
	return out, nil
}

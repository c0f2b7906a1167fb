package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// DiffCheckpoints answers GET /threads/{thread}/diff?a=…&b=…: per state
// key, whether it was added, removed or changed from checkpoint a to b,
// with a compact JSON diff (one line per changed path). The diff is made
// on the server, so the browser never receives either whole state.
func DiffCheckpoints(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		q := r.URL.Query()
		if q.Get("a") == "" || q.Get("b") == "" {
			fail(w, r, rt.Logger, fmt.Errorf("%w: pick two checkpoints (a and b) to compare", runs.ErrInvalidInput))
			return
		}
		a, err := checkpointParam(r, "a", q.Get("a"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		b, err := checkpointParam(r, "b", q.Get("b"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		v := web.DiffView{Thread: thread, A: a, B: b}
		var vals [2]map[string]any
		for i, id := range []string{a, b} {
			tup, err := rt.Runs.Checkpoint(r.Context(), thread, id)
			if err != nil {
				fail(w, r, rt.Logger, err)
				return
			}
			s, err := p.StateOf(tup, id == "")
			if err != nil {
				fail(w, r, rt.Logger, err)
				return
			}
			vals[i] = s.Values
			if i == 0 {
				v.NextA = s.Next
			} else {
				v.NextB = s.Next
			}
		}
		v.Rows, v.Unchanged = DiffValues(vals[0], vals[1])
		render(w, r, rt.Logger, http.StatusOK, web.Diff(v))
	})
}

// DiffValues compares two states key by key, as JSON (so a typed value
// and its JSON form are equal). Rows are sorted by key; unchanged lists
// the keys equal in both. Each line names the path it changes from the
// state key down (see PathKey).
func DiffValues(a, b map[string]any) (rows []web.DiffRow, unchanged []string) {
	keys := map[string]struct{}{}
	for k := range a {
		keys[k] = struct{}{}
	}
	for k := range b {
		keys[k] = struct{}{}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		av, inA := a[k]
		bv, inB := b[k]
		switch {
		case !inA:
			rows = append(rows, web.DiffRow{Key: k, Kind: "added", Lines: []string{"+ " + PathKey("", k) + ": " + compact(jsonShape(bv))}})
		case !inB:
			rows = append(rows, web.DiffRow{Key: k, Kind: "removed", Lines: []string{"- " + PathKey("", k) + ": " + compact(jsonShape(av))}})
		default:
			ja, jb := jsonShape(av), jsonShape(bv)
			if reflect.DeepEqual(ja, jb) {
				unchanged = append(unchanged, k)
				continue
			}
			d := &differ{}
			d.diff(PathKey("", k), ja, jb)
			if d.more > 0 {
				d.lines = append(d.lines, "… "+strconv.Itoa(d.more)+" more changes")
			}
			rows = append(rows, web.DiffRow{Key: k, Kind: "changed", Lines: d.lines})
		}
	}
	return rows, unchanged
}

// jsonShape round-trips v through JSON, so Go structs and slices compare
// and print as the JSON a person sees.
func jsonShape(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(cannot be shown as JSON: %v)", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return string(b)
	}
	return out
}

func compact(v any) string {
	s := encodeJSON(v, false)
	if len(s) > diffValueBytes {
		return textcut.Cut(s, diffValueBytes) + "…"
	}
	return s
}

// differ collects one line per changed path, up to diffLinesPerKey.
type differ struct {
	lines []string
	more  int
}

func (d *differ) add(line string) {
	if len(d.lines) >= diffLinesPerKey {
		d.more++
		return
	}
	d.lines = append(d.lines, line)
}

func (d *differ) diff(path string, a, b any) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			p := PathKey(path, k)
			switch {
			case !inX:
				d.add("+ " + p + ": " + compact(yv))
			case !inY:
				d.add("- " + p + ": " + compact(xv))
			default:
				d.diff(p, xv, yv)
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(x), len(y))
		for i := 0; i < n; i++ {
			d.diff(pathIndex(path, i), x[i], y[i])
		}
		for i := n; i < len(y); i++ {
			d.add("+ " + pathIndex(path, i) + ": " + compact(y[i]))
		}
		for i := n; i < len(x); i++ {
			d.add("- " + pathIndex(path, i) + ": " + compact(x[i]))
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		d.add("~ " + path + ": " + compact(a) + " → " + compact(b))
	}
}

// PathKey extends a diff path by an object key, in the notation a person
// reads in code rather than a JSON pointer: messages[2].content,
// plan.steps[0]. A key that is not an identifier is quoted as a JSON
// string in brackets (["odd key"], ["a\"b"]), so every path reads back
// unambiguously; base "" is the state itself, where a key stands alone.
func PathKey(base, key string) string {
	if isIdentifier(key) {
		if base == "" {
			return key
		}
		return base + "." + key
	}
	return base + "[" + encodeJSON(key, false) + "]"
}

func pathIndex(base string, i int) string { return base + "[" + strconv.Itoa(i) + "]" }

// isIdentifier: an ASCII letter or underscore, then letters, digits or
// underscores. Anything else (spaces, dots, brackets, quotes, non-ASCII
// letters that could look alike) is quoted.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

package pgsaver

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/superstep-dev/superstep/checkpoints"
)

// A metadata-only listing spends most of its time decoding JSON: a page
// of 50 rows decodes 50 checkpoint bodies and 50 metadata objects, and
// with encoding/json (which scans every input twice, once to validate it
// and once to decode it) that was most of a page's time over the raw
// index scan. So a listing reads the text it knows the shape of by hand
// (listDecoder, plainJSON): bodies as this package writes them (names
// without characters encoding/json escapes) and metadata as Postgres
// prints jsonb (BenchmarkListDecode: a whole body ~1.1 us where
// encoding/json takes 3.8, its header 0.13 us, metadata 0.3 us where
// UnmarshalJSON takes 3.1). Any other body goes to
// github.com/go-json-experiment/json, the reference implementation of
// encoding/json/v2 (which Go 1.26 ships behind GOEXPERIMENT=jsonv2), in a
// single pass (~2 us), then to encoding/json; any other metadata to
// Metadata.UnmarshalJSON. Every decoder here follows one rule: it decodes
// only what it decodes as encoding/json would, and on anything else gives
// the input, afresh, to the next, and last to encoding/json, whose result
// (an error, or what it accepts) stands. FuzzListDecode holds them to
// encoding/json, seeded with the shapes each path takes.

// v1Semantics makes the v2 decoder follow encoding/json's rules
// (case-insensitive field names, duplicate names, invalid UTF-8), except
// how it reports errors: encoding/json's way validates the whole input
// before decoding it, a second pass that costs a third of the time, and
// an error is left to encoding/json anyway. Times are given to
// time.Time.UnmarshalJSON as they are written, escapes and all, as
// encoding/json gives them: v2's own time decoding unquotes the string
// first, and so accepted "\u005a" for the zone where encoding/json
// refuses it.
var v1Semantics = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFunc(func(b []byte, t *time.Time) error { return t.UnmarshalJSON(b) })))

// unmarshal decodes b into a zero *v, as json.Unmarshal does: with the v2
// decoder, and when it refuses b, afresh with encoding/json, whose error
// (or what it accepts) stands.
func unmarshal[T any](b []byte, v *T) error {
	var zero T
	*v = zero // both decoders merge into what is there
	if jsonv2.Unmarshal(b, v, v1Semantics) != nil {
		*v = zero
		return json.Unmarshal(b, v)
	}
	return nil
}

// decodeBody decodes a checkpoint body into cp, as json.Unmarshal does.
// ChannelValues is never kept: a listing has no values.
func decodeBody(body []byte, cp *checkpoints.Checkpoint) error {
	if err := unmarshal(body, cp); err != nil {
		return err
	}
	cp.ChannelValues = nil
	return nil
}

// listDecoder decodes the bodies and metadata of a listing's rows. Text
// as this package writes bodies and as Postgres prints jsonb is read by
// hand (plainJSON), sharing the strings rows repeat (names); any other
// text goes to decodeBody and Metadata.UnmarshalJSON, so the results are
// always encoding/json's.
type listDecoder struct {
	r     plainJSON
	names names
	lists nameLists // the rows' Next and UpdatedChannels
	steps stepMemo  // the last metadata read member by member
	// step is where fields found the step's value in its text: the
	// offsets of its first byte and of the byte after it, or -1s.
	step [2]int
}

// newListDecoder returns a decoder for a listing of about rows rows.
func newListDecoder(rows int) *listDecoder {
	return &listDecoder{names: names{}, lists: newNameLists(rows), steps: stepMemo{on: rows != 1}}
}

// header decodes the header of a checkpoint body (V, ID, TS and Next)
// into cp, leaving every other field zero; an ID equal to id is id.
//
// Every body this package writes (PreparePut's json.Marshal of a
// Checkpoint, frameBody) begins with its header, v, id, ts and next (when
// Next is not nil) in that order, and a Headers listing reads no further
// (when the id and the next names hold no character encoding/json
// escapes, as the engine's do not): decoding the rest, only to check it,
// was most of a history page's time. A body that begins otherwise is
// decoded as json.Unmarshal decodes it into a header (v, id, ts and next;
// other fields are checked for JSON syntax only).
// So a Headers listing does not see damage past a body's header, or in
// fields it does not decode (a hand-edited row); Get and full listings,
// which decode the whole body, report it.
func (d *listDecoder) header(body []byte, cp *checkpoints.Checkpoint, id string) error {
	d.r.reset(body)
	*cp = checkpoints.Checkpoint{}
	mark := d.lists.mark()
	if d.readHeader(cp, id) && d.r.next(',') {
		return nil
	}
	d.lists.truncate(mark) // what readHeader read of Next is thrown away
	var h header
	if err := unmarshal(body, &h); err != nil {
		return err
	}
	*cp = checkpoints.Checkpoint{V: h.V, ID: h.ID, TS: h.TS, Next: h.Next}
	return nil
}

// readHeader reads {"v":<integer>,"id":<string>,"ts":<string> and then
// ,"next":<names> if it comes next (a body's beginning as this package
// writes it) into cp; an ID equal to id is id.
func (d *listDecoder) readHeader(cp *checkpoints.Checkpoint, id string) bool {
	r := &d.r
	if !r.lit(`{"v":`) {
		return false
	}
	cp.V = r.integer()
	if !r.lit(`,"id":`) {
		return false
	}
	idText := r.str()
	if !r.lit(`,"ts":`) {
		return false
	}
	ts := r.quoted()
	if !r.ok {
		return false
	}
	if t, ok := utcTime(ts); ok {
		cp.TS = t
	} else if cp.TS.UnmarshalJSON(ts) != nil {
		return false
	}
	if r.lit(`,"next":`) && !d.readNames(&cp.Next) {
		return false
	}
	if cp.ID = id; string(idText) != id {
		cp.ID = string(idText)
	}
	return true
}

// readNames reads a JSON array of plain strings, or null, into *dst, as
// encoding/json would: null leaves it nil (this package writes no "next"
// key instead), an empty array makes it empty, not nil. The names are
// shared through d.names, the slice is *dst's own part of d.lists.
func (d *listDecoder) readNames(dst *[]string) bool {
	r := &d.r
	if r.lit("null") {
		return true
	}
	r.must('[')
	if r.next(']') {
		*dst = []string{}
		return r.ok
	}
	d.lists.begin()
	for r.ok {
		if s := r.str(); r.ok {
			d.lists.add(d.names.get(s))
		}
		if r.next(']') {
			break
		}
		r.must(',')
	}
	if !r.ok {
		return false // the caller throws the row's lists away
	}
	*dst = d.lists.list()
	return true
}

// utcTime parses quoted, a JSON string, when it is a time in UTC as
// time.RFC3339Nano writes one ("2006-01-02T15:04:05.999999999Z"), as
// time.Time's UnmarshalJSON would: the engine saves times so, and
// parsing them by hand takes a fifth of the time. ok is false for any
// other text, which is then left to UnmarshalJSON.
func utcTime(quoted []byte) (t time.Time, ok bool) {
	b := quoted
	if len(b) < len(`"2006-01-02T15:04:05Z"`) || b[0] != '"' || b[len(b)-2] != 'Z' || b[len(b)-1] != '"' {
		return t, false
	}
	b = b[1 : len(b)-2]
	num := func(i, n int) int {
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return t, false
	}
	year, month, day, hour, minute, sec := num(0, 4), num(5, 2), num(8, 2), num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return t, false
	}
	if day > 28 && time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Day() != day {
		return t, false // past the month's end
	}
	nsec := 0
	if frac := b[19:]; len(frac) > 0 {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return t, false
		}
		if nsec = num(20, len(frac)-1); nsec < 0 {
			return t, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// body decodes a checkpoint body into cp, as decodeBody does; an ID
// equal to id is id.
func (d *listDecoder) body(body []byte, cp *checkpoints.Checkpoint, id string) error {
	d.r.reset(body)
	*cp = checkpoints.Checkpoint{}
	mark := d.lists.mark()
	if d.readBody(cp, id) {
		return nil
	}
	d.lists.truncate(mark) // what readBody read of the lists is thrown away
	return decodeBody(body, cp)
}

// readBody reads a body as this package writes it: its header (Next
// included), then "channel_values":null, the two version maps and the
// updated channels, in that order.
func (d *listDecoder) readBody(cp *checkpoints.Checkpoint, id string) bool {
	r := &d.r
	if !d.readHeader(cp, id) || !r.lit(`,"channel_values":null,"channel_versions":`) {
		return false
	}
	cp.ChannelVersions = d.versions()
	if !r.lit(`,"versions_seen":`) {
		return false
	}
	r.must('{')
	cp.VersionsSeen = map[string]map[string]int64{}
	if !r.next('}') {
		for r.ok {
			node := r.key()
			if seen := d.versions(); r.ok {
				cp.VersionsSeen[d.names.get(node)] = seen
			}
			if r.next('}') {
				break
			}
			r.must(',')
		}
	}
	if !r.lit(`,"updated_channels":`) {
		return false
	}
	if !d.readNames(&cp.UpdatedChannels) {
		return false
	}
	r.must('}')
	return r.end()
}

// versions reads an object of channel versions. A body read only in part
// is thrown away: body decodes it again from a zero Checkpoint.
func (d *listDecoder) versions() map[string]int64 {
	r := &d.r
	r.must('{')
	m := map[string]int64{}
	if r.next('}') {
		return m
	}
	for r.ok {
		ch := r.key()
		if v := r.integer(); r.ok {
			m[d.names.get(ch)] = int64(v)
		}
		if r.next('}') {
			break
		}
		r.must(',')
	}
	return m
}

// metadata fills md from raw, the text of a jsonb metadata column, as
// json.Unmarshal(raw, md) would, except that an empty Parents may be left
// nil (the callers choose what it becomes). Strings equal to those of
// prev (the previous row's metadata) are shared. The object is read
// member by member (plainJSON): a string is taken as its bytes, a step
// through strconv, true, false and null as themselves, and every other
// value through encoding/json, as UnmarshalJSON does. Text that is not
// plain, keys not in jsonb's order, and any error leave md to
// UnmarshalJSON.
//
// A row whose text is that of the last metadata read member by member
// but for its step (stepMemo) is not read again.
func (d *listDecoder) metadata(md, prev *checkpoints.Metadata, raw []byte) error {
	if d.steps.read(md, raw) {
		return nil
	}
	if d.fields(md, prev, raw) != nil || !d.r.end() {
		*md = checkpoints.Metadata{}
		return json.Unmarshal(raw, md)
	}
	d.steps.keep(md, raw, d.step)
	return nil
}

// stepMemo is the last metadata a listing read member by member (fields)
// with an integer step: its text before and after the step's value, and
// what it decoded to. The rows of a history page repeat their metadata
// but for the step, and reading it again was half of a row's decoding
// (BenchmarkListDecode/metadata): a row whose text is the memo's head,
// an integer and its tail decodes, member by member, to the memo's
// metadata with that step, since fields reads each member of plain text
// alone and the integer ends where the step's value ended (the tail
// begins with a byte no number holds). The memo's maps are those of the
// row it was read from, which nothing changes while the listing runs;
// each row it gives is given copies, so no two tuples share a map, and it
// is kept only when Extra holds no value a caller could change in place
// (a map or a slice).
type stepMemo struct {
	on         bool // for listings of more than one row
	ok         bool
	buf        []byte // head and tail, copied from the driver's memory
	head, tail []byte
	md         checkpoints.Metadata
}

// read fills md from raw when raw is the memo's text with another
// integer step.
func (m *stepMemo) read(md *checkpoints.Metadata, raw []byte) bool {
	if !m.ok || len(raw) <= len(m.head)+len(m.tail) || !bytes.HasPrefix(raw, m.head) || !bytes.HasSuffix(raw, m.tail) {
		return false
	}
	step, ok := plainInt(raw[len(m.head) : len(raw)-len(m.tail)])
	if !ok {
		return false
	}
	*md = m.md
	md.Step = step
	md.Parents = maps.Clone(m.md.Parents) // nil stays nil
	md.Extra = maps.Clone(m.md.Extra)
	return true
}

// keep makes md, just read from raw by fields, the memo, when its step's
// value is at step in raw and its Extra can be copied by maps.Clone.
func (m *stepMemo) keep(md *checkpoints.Metadata, raw []byte, step [2]int) {
	if !m.on || step[0] < 0 {
		return
	}
	for _, v := range md.Extra {
		switch v.(type) {
		case nil, bool, float64, string:
		default:
			return
		}
	}
	if n := len(raw) - (step[1] - step[0]); cap(m.buf) < n {
		m.buf = make([]byte, 0, n)
	}
	m.buf = append(append(m.buf[:0], raw[:step[0]]...), raw[step[1]:]...)
	m.head, m.tail = m.buf[:step[0]], m.buf[step[0]:]
	m.md, m.ok = *md, true
}

// plainInt reads b, whole, as fields reads a step that is plain: a JSON
// integer (no fraction, exponent or leading zero) that fits an int.
func plainInt(b []byte) (int, bool) {
	digits := b
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(string(b))
	return n, err == nil
}

// errNotPlain is fields' error for text plainJSON does not read.
var errNotPlain = errors.New("pgsaver: not plain JSON")

func (d *listDecoder) fields(md, prev *checkpoints.Metadata, raw []byte) error {
	r := &d.r
	r.reset(raw)
	*md = checkpoints.Metadata{}
	d.step = [2]int{-1, -1}
	if r.must('{'); r.next('}') {
		return nil
	}
	var last []byte
	for r.ok {
		key := r.key()
		// Postgres prints a jsonb object's keys once each, shorter before
		// longer, then in byte order: text in any other order (which may
		// name a key twice) is left to UnmarshalJSON.
		if last != nil && (len(key) < len(last) || len(key) == len(last) && bytes.Compare(key, last) <= 0) {
			return errNotPlain
		}
		last = key
		v := r.value()
		if !r.ok {
			return errNotPlain
		}
		var err error
		switch string(key) {
		case "source":
			if s, ok := r.plainString(v); ok {
				md.Source = checkpoints.Source(share(s, string(prev.Source)))
			} else {
				err = json.Unmarshal(v, &md.Source)
			}
		case "step":
			if md.Step, err = strconv.Atoi(string(v)); err != nil {
				md.Step, err = 0, json.Unmarshal(v, &md.Step)
			} else {
				d.step = [2]int{r.i - len(v), r.i}
			}
		case "run_id":
			if s, ok := r.plainString(v); ok {
				md.RunID = share(s, prev.RunID)
			} else {
				err = json.Unmarshal(v, &md.RunID)
			}
		case "parents":
			if string(v) != "{}" {
				err = json.Unmarshal(v, &md.Parents)
			}
		default:
			if md.Extra == nil {
				md.Extra = map[string]any{}
			}
			k := d.names.get(key)
			md.Extra[k], err = d.extraValue(v, prev.Extra[k])
		}
		if err != nil {
			return err
		}
		if r.next('}') {
			return nil
		}
		r.must(',')
	}
	return errNotPlain
}

// extraValue decodes v, the value of a metadata key that is not a field
// (the value d.r just read), as json.Unmarshal into an any does; a string
// equal to prev is prev.
func (d *listDecoder) extraValue(v []byte, prev any) (any, error) {
	if s, ok := d.r.plainString(v); ok {
		if p, ok := prev.(string); ok && p == string(s) {
			return prev, nil // boxing p again would allocate
		}
		return string(s), nil
	}
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	var x any
	err := json.Unmarshal(v, &x)
	return x, err
}

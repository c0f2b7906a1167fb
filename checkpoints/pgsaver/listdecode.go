package pgsaver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/superstep-dev/superstep/checkpoints"
)

// A metadata-only listing spends most of its time decoding JSON: a page
// of 50 rows decodes 50 checkpoint bodies and 50 metadata objects, and
// with encoding/json (which scans every input twice, once to validate it
// and once to decode it) that was most of a page's time over the raw
// index scan. So a listing (and a Get) decodes bodies with
// github.com/go-json-experiment/json, the reference implementation of
// encoding/json/v2 (which Go 1.26 ships behind GOEXPERIMENT=jsonv2), in a
// single pass (BenchmarkListDecode: ~1 us for a header where
// encoding/json takes 2.2, ~2.4 us for a whole body where it takes 4.7),
// and metadata with its tokenizer (~0.7 us where UnmarshalJSON takes
// 4.6). Both decoders follow one rule: they decode only what they decode
// as encoding/json would, and on any error they give the input to
// encoding/json, whose result (an error, or what it accepts) stands.
// FuzzListDecode holds them to encoding/json on every input.

// v1Semantics makes the v2 decoder follow encoding/json's rules
// (case-insensitive field names, duplicate names, invalid UTF-8, times
// through time.Time.UnmarshalJSON), except how it reports errors:
// encoding/json's way validates the whole input before decoding it, a
// second pass that costs a third of the time, and an error is left to
// encoding/json anyway.
var v1Semantics = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsonv1.ReportErrorsWithLegacySemantics(false))

// decodeBody decodes a checkpoint body into cp, as json.Unmarshal does.
// ChannelValues is never kept: a listing has no values.
func decodeBody(body []byte, cp *checkpoints.Checkpoint) error {
	if jsonv2.Unmarshal(body, cp, v1Semantics) != nil {
		*cp = checkpoints.Checkpoint{}
		if err := json.Unmarshal(body, cp); err != nil {
			return err
		}
	}
	cp.ChannelValues = nil
	return nil
}

// decodeHeader decodes the header of a checkpoint body (V, ID and TS)
// into cp, leaving every other field zero; an ID equal to id is id.
//
// Every body this package writes (PreparePut's json.Marshal of a
// Checkpoint, frameBody) begins with its header, v, id and ts in that
// order, and a Headers listing reads no further (bodyHeader): decoding
// the rest, only to check it, was most of a history page's time. A body
// that begins otherwise (none this package writes) is decoded whole, as
// json.Unmarshal does. So a Headers listing does not see damage past a
// body's header (a hand-edited row); Get and full listings, which decode
// the whole body, report it.
func decodeHeader(body []byte, cp *checkpoints.Checkpoint, id string) error {
	h, _, ok := bodyHeader(body, id)
	if !ok {
		if jsonv2.Unmarshal(body, &h, v1Semantics) != nil {
			h = header{}
			if err := json.Unmarshal(body, &h); err != nil {
				return err
			}
		}
	}
	*cp = checkpoints.Checkpoint{V: h.V, ID: h.ID, TS: h.TS}
	return nil
}

// bodyHeader reads the header body begins with when it begins as this
// package writes it: {"v":<integer>,"id":"<string>","ts":"<string>",
// with both strings printable ASCII without escapes. It returns the
// header, as json.Unmarshal gives it for body[:n] closed by a '}', and
// n; ok is false when body begins otherwise, or its ts is not a time.
// An ID equal to id is id.
func bodyHeader(body []byte, id string) (h header, n int, ok bool) {
	rest, ok := bytes.CutPrefix(body, []byte(`{"v":`))
	if !ok {
		return h, 0, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 || !jsonInteger(rest[:i]) {
		return h, 0, false
	}
	v, err := strconv.Atoi(string(rest[:i]))
	if err != nil {
		return h, 0, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"id":`))
	if !ok {
		return h, 0, false
	}
	idText, rest, ok := asciiString(rest)
	if !ok {
		return h, 0, false
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`,"ts":`))
	if !ok {
		return h, 0, false
	}
	tsText, rest, ok := asciiString(rest)
	if !ok || len(rest) == 0 || rest[0] != ',' || h.TS.UnmarshalJSON(tsText) != nil {
		return header{}, 0, false
	}
	h.V = v
	if h.ID = id; string(idText[1:len(idText)-1]) != id {
		h.ID = string(idText[1 : len(idText)-1])
	}
	return h, len(body) - len(rest), true
}

// jsonInteger reports whether b is a JSON number without fraction or
// exponent.
func jsonInteger(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || b[0] == '0' && len(b) > 1 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// asciiString splits b after the JSON string it begins with, when that
// string is printable ASCII without escapes; quoted keeps the quotes.
func asciiString(b []byte) (quoted, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[:i+1], b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// metadataDecoder decodes the metadata of a listing's rows, as
// checkpoints.Metadata's UnmarshalJSON does, reusing one tokenizer.
type metadataDecoder struct {
	buf  bytes.Buffer // reset to each row's metadata; the tokenizer reads it in place
	dec  jsontext.Decoder
	keys []string // the extra keys seen so far, each one string shared by every row
}

// key returns b as a string, the one kept in d.keys.
func (d *metadataDecoder) key(b []byte) string {
	for _, k := range d.keys {
		if k == string(b) {
			return k
		}
	}
	if len(d.keys) == 16 { // metadata with many keys: stop looking
		return string(b)
	}
	d.keys = append(d.keys, string(b))
	return d.keys[len(d.keys)-1]
}

// decode fills md from raw, the text of a jsonb metadata column, as
// json.Unmarshal(raw, md) would. Strings equal to those of prev (the
// previous row's metadata) are shared. The object is read key by key:
// a plain string (no escapes) is taken as its bytes, a step that is a
// plain integer through strconv, and every other value (and a key with
// escapes) through encoding/json, as UnmarshalJSON does. The tokenizer
// rejects duplicate keys and invalid UTF-8 (which jsonb never produces);
// on those, and on any other error, md is decoded by UnmarshalJSON.
func (d *metadataDecoder) decode(md, prev *checkpoints.Metadata, raw []byte) error {
	if len(raw) == 0 || raw[0] != '{' || d.fields(md, prev, raw) != nil {
		*md = checkpoints.Metadata{}
		return json.Unmarshal(raw, md)
	}
	return nil
}

func (d *metadataDecoder) fields(md, prev *checkpoints.Metadata, raw []byte) error {
	d.buf.Reset()
	d.buf.Write(raw)
	d.dec.Reset(&d.buf)
	if _, err := d.dec.ReadToken(); err != nil { // {
		return err
	}
	for d.dec.PeekKind() == '"' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		key, ok := plainString(name)
		if !ok {
			var s string
			if err := json.Unmarshal(name, &s); err != nil {
				return err
			}
			key = []byte(s)
		}
		v, err := d.dec.ReadValue()
		if err != nil {
			return err
		}
		switch string(key) {
		case "source":
			if s, ok := plainString(v); ok {
				md.Source = checkpoints.Source(share(s, string(prev.Source)))
			} else {
				err = json.Unmarshal(v, &md.Source)
			}
		case "step":
			if md.Step, err = strconv.Atoi(string(v)); err != nil {
				md.Step, err = 0, json.Unmarshal(v, &md.Step)
			}
		case "run_id":
			if s, ok := plainString(v); ok {
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
			k := d.key(key)
			md.Extra[k], err = extraValue(v, prev.Extra[k])
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil { // }
		return err
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return errTrailing
	}
	return nil
}

var errTrailing = errors.New("pgsaver: data after the metadata object")

// extraValue decodes the value of a metadata key that is not a field, as
// json.Unmarshal into an any does; a plain string equal to prev is prev.
func extraValue(v []byte, prev any) (any, error) {
	if s, ok := plainString(v); ok {
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

// plainString returns the contents of v, a valid JSON value, when it is
// a string without escapes: then its bytes are the string's.
func plainString(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

package pgsaver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// listDecodeSeeds are checkpoint bodies and metadata as a listing reads
// them: bodies written by Put and PutFrame, metadata as Postgres prints
// jsonb (keys sorted by length, ", " and ": " between them), then inputs
// where encoding/json and the v2 decoder could part: names in another
// case, duplicate names, escapes, invalid UTF-8, odd times and numbers,
// trailing data.
var listDecodeSeeds = []string{
	// A body of BenchmarkPGHistoryPage's thread, and a counter loop's
	// written by PutFrame.
	`{"v":1,"id":"01a21685-e16a-7c4e-bd07-59c02308f8ee","ts":"2026-11-26T06:23:22.474806628Z","channel_values":null,"channel_versions":{"config":1,"messages":1000,"step":1000},"versions_seen":{"agent":{"messages":999},"tools":{"messages":999}},"updated_channels":["messages","step"]}`,
	`{"v":1,"id":"01a201c3-2d18-70f6-931a-7c7b0714615c","ts":"2026-11-26T04:00:00.123456789Z","channel_values":null,"channel_versions":{"__start__":2,"branch:to:inc":43,"n":43},"versions_seen":{"__input__":{},"__start__":{"__start__":1},"inc":{"branch:to:inc":42}},"updated_channels":["branch:to:inc","n"]}`,
	`{"v":1,"id":"\u003cid\u0026\u003e","ts":"2026-11-26T05:00:00.123456789+01:00","channel_values":{"n":1},"channel_versions":{"a\u0026b":1,"i\u2028j":5,"mé":7},"versions_seen":{"n\u003c1\u003e":{"z":3}},"updated_channels":[]}`,
	`{"v":1,"id":"x","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{},"versions_seen":{},"updated_channels":null}`,
	// Metadata.
	`{"step": 999, "user": "ann", "run_id": "run-1", "source": "loop", "parents": {}}`,
	`{"a": 2, "b": 1, "z": {"x": [1, 2], "y": 1}, "é": 3}`, `{"step": 999, "user": "ann", "source": "loop", "run_id": "run-1", "parents": {}}`,
	`{"a": 1, "a": 2}`, `{"ab": 1, "b": 2}`, `{"step": 1, "parents": {"": "p"}, "parents": {}}`,
	// Escaped strings in values, which go on to encoding/json one value
	// at a time.
	`{"a": "line\nbreak", "step": 1, "run_id": "r\u00e9", "source": "lo\"op", "parents": {"": "p\\1"}}`,
	`{"a": "\u0000", "b": "\ud800", "c": ["\/", {"d": "\t"}]}`, `{"a": "\q"}`, `{"a": "\u12"}`, `{"a": "\u12g4"}`,
	`{"a": "x\`, `{"a": "\"}`, `{"a": "\u00e9\u00E9"}`,
	`{"step": -1, "source": "input", "parents": {}}`,
	`{"n": 1000000000000000000000, "step": 1099511627776, "Source": "not the source", "nested": {"a": [1.5, "x", null, true]}, "run_id": "ru\tn-é", "source": "qu\"ote\\é\u2028", "parents": {"": "p1", "node:a|b": "p2"}}`,
	`{"list": [], "step": 7, "empty": {}, "source": "update", "parents": {}}`,
	`{"source": "loop", "step": 1.5}`, `{"source": "loop", "step": "1"}`, `{"source": 42, "step": 1}`,
	`{"source": "loop", "step": 1, "parents": {"": 1}}`, `{"source": null, "step": null, "run_id": null, "parents": null}`,
	`{"x": 1}`, `{"step": 1e2}`, `null`, `[1, 2]`, `7`, `{}`, `{"a": true, "b": false, "c": null, "d": 1e400}`,
	// Where the decoders could part.
	`{"V":1,"ID":"upper","Ts":"2026-01-01T00:00:00Z","Channel_Versions":{"a":1}}`,
	`{"v":1,"id":"a","id":"b","ts":"2026-01-01T00:00:00Z","ts":null}`,
	`{"v":1,"id":"` + "\xff\xfe" + `","ts":"2026-01-01T00:00:00Z"}`,
	`{"id":"\ud800","ts":"2026-01-01T24:00:00Z"}`, `{"ts":"2026-01-01T00:00:00.Z"}`, `{"ts":"2026-01-01t00:00:00z"}`,
	`{"ts":"2026-01-01T00:00:00+24:00"}`, `{"ts":" 2026-01-01T00:00:00Z"}`, `{"ts":1}`, `{"v":1.0}`, `{"v":-0}`, `{"v":9223372036854775808}`,
	`{"channel_versions":{"a":1,"a":null}}`, `{"versions_seen":{"n":null}}`, `{"updated_channels":["a",null]}`,
	`{"step": 1, "step": "x"}`, `{"step": "x", "step": 1}`, `{"source": "a", "sour\u0063e": 1}`, `{"user": "` + "\xff" + `"}`,
	`{"v":1} `, ` {"v":1}`, `{"v":1}x`, `{"v":1}{}`, `{"step": 1} {}`, `{"a\u0000b": "\u0000"}`, ``, `{`,
	// Headers as this package writes them, then what follows them
	// damaged, and beginnings it does not write.
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_versions":`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","id":"b"}`,
	`{"v":-0,"id":"","ts":"2026-01-01T00:00:00-00:30",}`, `{"v":01,"id":"a","ts":"2026-01-01T00:00:00Z","x":1}`,
	`{"v":1.0,"id":"a","ts":"2026-01-01T00:00:00Z","x":1}`, `{"v":99999999999999999999,"id":"a","ts":"2026-01-01T00:00:00Z","x":1}`,
	`{"v":1,"id":"a\u0041","ts":"2026-01-01T00:00:00Z","x":1}`, `{"v":1,"id":"a","ts":"2026-13-01T00:00:00Z","x":1}`,
	`{"v":1,"id":"é","ts":"2026-01-01T00:00:00Z","x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z"}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z" ,"x":1}`, `{"v":1, "id":"a","ts":"2026-01-01T00:00:00Z","x":1}`,
	// Times the header's own parser reads, and times it leaves to
	// UnmarshalJSON.
	`{"v":1,"id":"a","ts":"2024-02-29T23:59:59.1Z","x":1}`, `{"v":1,"id":"a","ts":"2026-02-29T00:00:00Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-04-31T00:00:00Z","x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T24:00:00Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:60Z","x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00.1234567891Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00.Z","x":1}`, `{"v":1,"id":"a","ts":"0000-01-01T00:00:00.000000000Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-1-01T00:00:00Z","x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00+00:00","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01 00:00:00Z","x":1}`, `{"v":1,"id":"a","ts":"+026-01-01T00:00:00Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00.-1Z","x":1}`, `{"v":1,"id":"a","ts":"2026-12-31T23:59:59.999999999Z","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00\u005a","x":1}`, `{"ts":"2026-01-01T00:00:00\u005a"}`,
	// Bodies whose names encoding/json escapes: read by hand up to the
	// escape, then afresh by the other decoders.
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{"b":2,"a\u0026b":1},"versions_seen":{},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{"a":1},"versions_seen":{"m":{"a":1},"n\u003c1\u003e":{"a":1}},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{"a":1},"versions_seen":{"m":{"a":1,"\u2028":2}},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{"a":1},"versions_seen":{},"updated_channels":["a","c\u003cd\u003e"]}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","channel_values":null,"channel_versions":{"a":1,"b":1.5},"versions_seen":{},"updated_channels":[]}`,
	// Next as this package writes it (absent when nil, [] when empty, a
	// node twice, names escaped), then as others could write it: null,
	// spaced, elsewhere, twice, in another case, damaged or not strings.
	bodyWithNext,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[],"channel_values":null,"channel_versions":{},"versions_seen":{},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a\u0026b","n\u003c1\u003e","\u2028","odd \"name\" \u003cé\u003e"],"channel_values":null,"channel_versions":{},"versions_seen":{},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["é","mé","","é"],"channel_values":null,"channel_versions":{"é":1},"versions_seen":{"é":{"é":1}},"updated_channels":["é"]}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":null,"channel_values":null,"channel_versions":{},"versions_seen":{},"updated_channels":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[ "a" , "b" ],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z" , "next" : ["a"],"x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a"],"next":["b"],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a"],"next":null}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","Next":["a"],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","x":1,"next":["a"]}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a"]}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[]}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a",],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a" "b"],"x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[1],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a",null],"x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":{},"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":"a","x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":nul,"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":nullx,"x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[["a"]],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a"`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":[`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["` + "\xff" + `"],"x":1}`, `{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["a\u0000"],"x":1}`,
	`{"v":1,"id":"a","ts":"2026-01-01T00:00:00Z","next":["` + "\t" + `"],"x":1}`, `{"next":["a"],"v":1,"id":"a","ts":"2026-01-01T00:00:00Z"}`,
	`{"v":1,"id":"a","ts":"2026-13-01T00:00:00Z","next":["a"],"x":1}`, `{"v":1,"id":"a\u0041","ts":"2026-01-01T00:00:00Z","next":["a"],"x":1}`,
}

// bodyWithNext is listDecodeSeeds[0] with a Next: a node planned twice
// (two Sends) and another.
var bodyWithNext = `{"v":1,"id":"01a21685-e16a-7c4e-bd07-59c02308f8ee","ts":"2026-11-26T06:23:22.474806628Z","next":["tools","tools","agent"],"channel_values":null,"channel_versions":{"config":1,"messages":1000,"step":1000},"versions_seen":{"agent":{"messages":999},"tools":{"messages":999}},"updated_channels":["messages","step"]}`

// FuzzListDecode: a listing's decoders (listDecoder's body, header and
// metadata) give what encoding/json gives, on every input: the
// same checkpoint, the same metadata, an error exactly when encoding/json
// gives one. A header is encoding/json's of the body's beginning when the
// body begins as this package writes it (readHeader), else of the whole.
func FuzzListDecode(f *testing.F) {
	for _, s := range listDecodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkListDecode(t, data)
	})
}

// TestListDecodeAsEncodingJSON runs FuzzListDecode's check on its seeds
// (go test runs the fuzz target on them too; this says so by name).
func TestListDecodeAsEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range listDecodeSeeds {
		checkListDecode(t, []byte(s))
	}
}

// TestBodiesBeginWithTheirHeader: every body this package writes, by Put
// (PreparePut) or PutFrame (frameBody), begins with its header as
// readHeader reads it, Next included (right after ts, and only when not
// nil), and one whose names encoding/json does not escape is read whole
// by readBody, so a listing gives none to the slower decoders. One with
// such names decodes as encoding/json decodes it.
func TestBodiesBeginWithTheirHeader(t *testing.T) {
	t.Parallel()
	times := []time.Time{time.Now(), time.Date(2026, 11, 26, 5, 0, 0, 0, time.FixedZone("x", -3600)), {}}
	nexts := [][]string{nil, {}, {"tools", "tools", "agent"}, {"mé"}}
	for _, ts := range times {
		for _, next := range nexts {
			f := &checkpoints.Frame{ID: checkpoints.NewID(), TS: ts, Channels: []string{"n"}, Versions: []int64{3},
				Seen: []checkpoints.SeenVersions{{Node: "inc", Channels: []string{"n"}, Versions: []int64{2}}}, Next: next}
			cp, newV, err := f.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			put, err := checkpoints.PreparePut(checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, newV)
			if err != nil {
				t.Fatal(err)
			}
			framed, err := frameBody(f)
			if err != nil {
				t.Fatal(err)
			}
			afterTS := []byte(`"ts":"` + ts.UTC().Format(time.RFC3339Nano) + `","next":`)
			sameNext := func(got []string) bool { return slices.Equal(got, next) && (got == nil) == (next == nil) }
			for _, body := range [][]byte{put.Body, framed} {
				if bytes.Contains(body, afterTS) != (next != nil) || bytes.Contains(body, []byte(`"next"`)) != (next != nil) {
					t.Errorf("body %s: next %#v is not right after ts, or there when nil", body, next)
				}
				d := newListDecoder(1)
				d.r.reset(body)
				var h, whole checkpoints.Checkpoint
				if !d.readHeader(&h, "") || !d.r.next(',') || h.V != checkpoints.FormatVersion || h.ID != f.ID || !h.TS.Equal(ts) || !sameNext(h.Next) {
					t.Errorf("body %s: header %+v, %v", body, h, d.r.ok)
				}
				if d.r.reset(body); !d.readBody(&whole, "") || !sameNext(whole.Next) {
					t.Errorf("body %s is not read as written: %+v", body, whole)
				}
				checkListDecode(t, body)
			}
			// PutFrame writes times in UTC, which the header's own parser reads.
			utc := []byte(`"` + ts.UTC().Format(time.RFC3339Nano) + `"`)
			if got, ok := utcTime(utc); !bytes.Contains(framed, utc) || !ok || !got.Equal(ts) {
				t.Errorf("PutFrame's time %s: utcTime = %v, %v", utc, got, ok)
			}
		}
		// Names encoding/json escapes leave the hand path, not the result.
		odd := &checkpoints.Frame{ID: checkpoints.NewID(), TS: ts, Channels: []string{"b", "a&b", "c<d>", "i\u2028j", "mé"}, Versions: []int64{2, 1, 3, 4, 5},
			Seen:            []checkpoints.SeenVersions{{Node: "m", Channels: []string{"b"}, Versions: []int64{1}}, {Node: "n<1>", Channels: []string{"a&b"}, Versions: []int64{1}}},
			UpdatedChannels: []string{"b", "c<d>"}}
		for _, next := range [][]string{nil, {"n<1>", "n<1>", "m"}, {"m", "i\u2028j"}} {
			odd.Next = next
			oddBody, err := frameBody(odd)
			if err != nil {
				t.Fatal(err)
			}
			checkListDecode(t, oddBody)
		}
	}
}

// TestNextIsEachTuplesOwn: rows read by one decoder (as a listing reads
// its rows, their lists in one chunk) get lists that share nothing:
// changing or appending to one tuple's Next or UpdatedChannels changes
// neither another's nor what the decoder reads next, and a row whose
// lists the decoder read only in part (then decoded afresh) leaves the
// rows around it as they were.
func TestNextIsEachTuplesOwn(t *testing.T) {
	t.Parallel()
	want := []string{"tools", "tools", "agent"}
	wantUpdated := []string{"messages", "step"}
	halfNext := strings.Replace(bodyWithNext, `"agent"]`, `"agent",1]`, 1)
	halfUpdated := strings.Replace(bodyWithNext, `"step"]`, `"step",1]`, 1)
	for _, headers := range []bool{true, false} {
		d := newListDecoder(50)
		read := d.body
		if headers {
			read = d.header
		}
		var rows []*checkpoints.Checkpoint
		for _, body := range []string{bodyWithNext, halfNext, bodyWithNext, halfUpdated, bodyWithNext} {
			cp := &checkpoints.Checkpoint{}
			if err := read([]byte(body), cp, ""); err != nil && body == bodyWithNext {
				t.Fatal(err)
			}
			rows = append(rows, cp)
		}
		a, b, c := rows[0], rows[2], rows[4]
		a.Next[0] = "changed"
		_ = append(a.Next, "appended")
		_ = append(a.UpdatedChannels, "appended")
		var next checkpoints.Checkpoint
		if err := read([]byte(bodyWithNext), &next, ""); err != nil {
			t.Fatal(err)
		}
		for _, cp := range []*checkpoints.Checkpoint{b, c, &next} {
			if !slices.Equal(cp.Next, want) {
				t.Errorf("headers %v: after changing one tuple's Next, another's is %q, want %q", headers, cp.Next, want)
			}
			if !headers && !slices.Equal(cp.UpdatedChannels, wantUpdated) {
				t.Errorf("after appending to one tuple's UpdatedChannels, another's is %q, want %q", cp.UpdatedChannels, wantUpdated)
			}
		}
		if !slices.Equal(a.Next, []string{"changed", "tools", "agent"}) {
			t.Errorf("headers %v: the changed tuple's Next is %q", headers, a.Next)
		}
	}
}

// A Headers listing reads its rows' Next into chunks of its own
// (nameLists), not a slice a row: a page of 50 rows, each with three
// names, allocates two chunks (the first, and a second when it is full),
// and a page of bodies without Next, or with an empty one, allocates
// nothing.
//
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestHeaderAllocatesOnlyNext(t *testing.T) {
	empty := strings.Replace(bodyWithNext, `["tools","tools","agent"]`, `[]`, 1)
	d := newListDecoder(1)
	for _, tc := range []struct {
		body   string
		allocs float64
	}{{listDecodeSeeds[0], 0}, {empty, 0}, {bodyWithNext, 2}} {
		var cp checkpoints.Checkpoint
		body, id := []byte(tc.body), "01a21685-e16a-7c4e-bd07-59c02308f8ee" // as a listing shares it
		allocs := testing.AllocsPerRun(20, func() {
			d.lists = newNameLists(50) // as newListDecoder makes them for a page
			for range 50 {
				if err := d.header(body, &cp, id); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != tc.allocs {
			t.Errorf("a page of 50 headers of %s: %v allocations, want %v", tc.body, allocs, tc.allocs)
		}
	}
}

func checkListDecode(t *testing.T, data []byte) {
	t.Helper()
	// seenSeeds is one decoder, and parallel tests check bodies.
	seenMu.Lock()
	defer seenMu.Unlock()
	// Bodies, whole and headers only, each decoded by a fresh decoder and
	// again by one that has read the other seeds (whose names it shares).
	var wantCP checkpoints.Checkpoint
	wantErr := json.Unmarshal(data, &wantCP)
	wantCP.ChannelValues = nil
	var wantH header
	headerOf := data
	d := newListDecoder(1)
	if d.r.reset(data); d.readHeader(&checkpoints.Checkpoint{}, "") && d.r.next(',') {
		headerOf = append(data[:d.r.i-1:d.r.i-1], '}')
	}
	wantHErr := json.Unmarshal(headerOf, &wantH)
	for _, d := range []*listDecoder{newListDecoder(1), seenSeeds} {
		for _, id := range []string{"", wantCP.ID} {
			var gotCP checkpoints.Checkpoint
			gotErr := d.body(data, &gotCP, id)
			if (gotErr == nil) != (wantErr == nil) || wantErr == nil && !reflect.DeepEqual(gotCP, wantCP) {
				t.Fatalf("body %q (id %q):\n got %+v, %v\nwant %+v, %v", data, id, gotCP, gotErr, wantCP, wantErr)
			}
			gotErr = d.header(data, &gotCP, id)
			if (gotErr == nil) != (wantHErr == nil) || wantHErr == nil && !reflect.DeepEqual(gotCP, checkpoints.Checkpoint{V: wantH.V, ID: wantH.ID, TS: wantH.TS, Next: wantH.Next}) {
				t.Fatalf("headers of %q (id %q):\n got %+v, %v\nwant %+v, %v", data, id, gotCP, gotErr, wantH, wantHErr)
			}
		}
	}

	// Metadata, decoded three times: the second time strings are shared
	// with the first's, the third time with another row's; by a decoder
	// of one row, and by decoders of a page, which read a row that is
	// the last one's but for its step from their memo (stepMemo).
	var wantMD checkpoints.Metadata
	wantErr = json.Unmarshal(data, &wantMD)
	for _, d := range []*listDecoder{newListDecoder(1), newListDecoder(50), seenSeeds} {
		var first, second, third checkpoints.Metadata
		firstErr := d.metadata(&first, &checkpoints.Metadata{}, data)
		secondErr := d.metadata(&second, &first, data)
		thirdErr := d.metadata(&third, &otherRow, data)
		for i, got := range []checkpoints.Metadata{first, second, third} {
			gotErr := []error{firstErr, secondErr, thirdErr}[i]
			if got.Parents == nil {
				got.Parents = map[string]string{} // as collectHeaders does
			}
			if (gotErr == nil) != (wantErr == nil) || wantErr == nil && !reflect.DeepEqual(got, wantMD) {
				t.Fatalf("metadata %q (decode %d):\n got %#v, %v\nwant %#v, %v", data, i+1, got, gotErr, wantMD, wantErr)
			}
		}
		checkStepMemo(t, d, data)
	}
}

// checkStepMemo: when d keeps data in its memo, the same text with any
// other text in place of its step's value, integer or not, decodes as
// encoding/json decodes it, and no two rows the memo gives share a map.
func checkStepMemo(t *testing.T, d *listDecoder, data []byte) {
	t.Helper()
	if !d.steps.ok || !bytes.HasPrefix(data, d.steps.head) {
		return // not kept, or kept from another seed
	}
	// A copy of the memo, whose buffer a text read afresh overwrites.
	m := d.steps
	m.buf = slices.Clone(m.buf)
	m.head, m.tail = m.buf[:len(m.head)], m.buf[len(m.head):]
	head, tail := string(m.head), string(m.tail)
	var rows []*checkpoints.Metadata
	for _, step := range []string{"0", "-0", "7", "-12", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "01", "+3", "+0", "-", "1.5", "1e2", "1.", "", "x", " 3", "3 ", "\"3\"", "null", "3,\"a\":1", "3} {"} {
		text := []byte(head + step + tail)
		var want checkpoints.Metadata
		wantErr := json.Unmarshal(text, &want)
		got := &checkpoints.Metadata{}
		gotErr := d.metadata(got, &checkpoints.Metadata{}, text)
		if got.Parents == nil {
			got.Parents = map[string]string{} // as collectHeaders does
		}
		if (gotErr == nil) != (wantErr == nil) || wantErr == nil && !reflect.DeepEqual(*got, want) {
			t.Fatalf("metadata %q (the memo's with step %q):\n got %#v, %v\nwant %#v, %v", text, step, *got, gotErr, want, wantErr)
		}
		if gotErr == nil {
			rows = append(rows, got)
		}
		d.steps = m // a text it read afresh may have taken its place
		m.buf = slices.Clone(m.buf)
		m.head, m.tail = m.buf[:len(m.head)], m.buf[len(m.head):]
	}
	for i, a := range rows {
		for _, b := range rows[i+1:] {
			if a.Extra != nil && reflect.ValueOf(a.Extra).UnsafePointer() == reflect.ValueOf(b.Extra).UnsafePointer() ||
				len(a.Parents) > 0 && reflect.ValueOf(a.Parents).UnsafePointer() == reflect.ValueOf(b.Parents).UnsafePointer() {
				t.Fatalf("metadata %q: two rows share a map", data)
			}
		}
	}
}

// otherRow is metadata a row before the one decoded may have had.
var otherRow = checkpoints.Metadata{Source: "update", Step: 3, RunID: "run-1", Parents: map[string]string{},
	Extra: map[string]any{"user": "ann", "n": 1.0, "a": "x"}}

// seenSeeds is a decoder that has read every seed, as bodies and as
// metadata: the names it keeps must not change what it decodes. seenMu
// guards it.
var (
	seenMu    sync.Mutex
	seenSeeds = func() *listDecoder {
		d := newListDecoder(50)
		for _, s := range listDecodeSeeds {
			var cp checkpoints.Checkpoint
			var md checkpoints.Metadata
			_ = d.body([]byte(s), &cp, "")
			_ = d.metadata(&md, &checkpoints.Metadata{}, []byte(s))
		}
		return d
	}()
)

// BenchmarkListDecode is the client's share of a metadata-only page, per
// row: decoding a body of BenchmarkPGHistoryPage's thread (whole, or its
// header; without Next, and with one: /next) and its metadata, with the
// listing's decoders and with encoding/json, which they replace.
func BenchmarkListDecode(b *testing.B) {
	body := []byte(listDecodeSeeds[0])
	md := []byte(listDecodeSeeds[4])
	var cp checkpoints.Checkpoint
	d := newListDecoder(1) // as in a listing: names and the id are shared
	id := "01a21685-e16a-7c4e-bd07-59c02308f8ee"
	// Rows come in pages of 50, each page's name lists in a buffer of
	// their own, as a listing's decoder keeps them (listDecoder.lists).
	rows := 0
	row := func() {
		if rows++; rows%50 == 0 {
			d.lists = newNameLists(50)
		}
	}
	b.Run("body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			row()
			if err := d.body(body, &cp, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("body/json-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := decodeBody(body, &cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("body/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cp = checkpoints.Checkpoint{}
			if err := json.Unmarshal(body, &cp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("header", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := d.header(body, &cp, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	withNext := []byte(bodyWithNext)
	b.Run("body/next", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			row()
			if err := d.body(withNext, &cp, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("header/next", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			row()
			if err := d.header(withNext, &cp, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("header/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var h header
			if err := json.Unmarshal(body, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A page's metadata: the same text but for the step, row after row,
	// read from the memo (stepMemo) after the first; /whole reads each
	// row member by member, as a decoder of one row does.
	page := make([][]byte, 50)
	for i := range page {
		page[i] = []byte(strings.Replace(string(md), "999", fmt.Sprint(950+i), 1))
	}
	for _, bc := range []struct {
		name string
		rows int
	}{{"metadata", 50}, {"metadata/whole", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			d := newListDecoder(bc.rows)
			var prev checkpoints.Metadata
			if err := d.metadata(&prev, &checkpoints.Metadata{}, md); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var m checkpoints.Metadata
				if err := d.metadata(&m, &prev, page[i%len(page)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	b.Run("metadata/encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m checkpoints.Metadata
			if err := json.Unmarshal(md, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestListDecodeKnowsEveryMetadataField: the listing's metadata decoder
// names Metadata's JSON keys itself (any other key goes to Extra), so a
// field added to Metadata must be added there too. A metadata object
// with every field's key set decodes as encoding/json decodes it.
func TestListDecodeKnowsEveryMetadataField(t *testing.T) {
	t.Parallel()
	samples := map[string]string{"source": `"loop"`, "step": "7", "parents": `{"": "p1"}`, "run_id": `"r1"`}
	var parts []string
	mt := reflect.TypeFor[checkpoints.Metadata]()
	for i := range mt.NumField() {
		name, _, _ := strings.Cut(mt.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		v, ok := samples[name]
		if !ok {
			t.Fatalf("Metadata has a field with JSON key %q that listdecode's metadata decoder does not name: add it there and here", name)
		}
		parts = append(parts, fmt.Sprintf("%q: %s", name, v))
	}
	parts = append(parts, `"user": "ann"`)
	raw := []byte("{" + strings.Join(parts, ", ") + "}")
	var want checkpoints.Metadata
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	d := newListDecoder(1)
	var got checkpoints.Metadata
	if err := d.metadata(&got, &checkpoints.Metadata{}, raw); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listdecode: %+v, encoding/json: %+v", got, want)
	}

	// A page's decoder gives the second row from its memo, a copy of
	// the first's metadata with maps of its own: a field a plain copy
	// would share between rows needs its own copy there.
	for i := range mt.NumField() {
		f := mt.Field(i)
		switch f.Type.Kind() {
		case reflect.Map, reflect.Slice, reflect.Pointer, reflect.Interface:
			if f.Name != "Parents" && f.Name != "Extra" {
				t.Errorf("Metadata.%s is a %s: stepMemo.read must give each row its own copy", f.Name, f.Type.Kind())
			}
		}
	}
	// The text as Postgres prints it: keys shorter before longer, then
	// in byte order.
	slices.SortFunc(parts, func(a, b string) int {
		ka, _, _ := strings.Cut(a, ":")
		kb, _, _ := strings.Cut(b, ":")
		return cmp.Or(cmp.Compare(len(ka), len(kb)), strings.Compare(ka, kb))
	})
	raw = []byte("{" + strings.Join(parts, ", ") + "}")
	page := newListDecoder(50)
	var first, second checkpoints.Metadata
	if err := page.metadata(&first, &checkpoints.Metadata{}, raw); err != nil {
		t.Fatal(err)
	}
	if err := page.metadata(&second, &first, raw); err != nil || !page.steps.ok {
		t.Fatalf("second row: %v, from the memo: %v", err, page.steps.ok)
	}
	if !reflect.DeepEqual(second, want) {
		t.Errorf("listdecode from its memo: %+v, encoding/json: %+v", second, want)
	}
	second.Parents[""], second.Extra["user"] = "changed", "changed"
	if !reflect.DeepEqual(first, want) {
		t.Errorf("changing the second row's maps changed the first's: %+v", first)
	}
}

// The memo gives each row its own maps, but copies them shallowly: a row
// whose Extra holds an object or an array must not become the memo, or
// two rows would share the value inside.
func TestStepMemoSharesNoNestedValue(t *testing.T) {
	t.Parallel()
	d := newListDecoder(50)
	read := func(step string) *checkpoints.Metadata {
		md := &checkpoints.Metadata{}
		// As Postgres prints jsonb: shorter keys first.
		text := `{"list": [1], "step": ` + step + `, "nested": {"k": "v"}, "source": "loop"}`
		if err := d.metadata(md, &checkpoints.Metadata{}, []byte(text)); err != nil {
			t.Fatal(err)
		}
		return md
	}
	first, second := read("1"), read("2")
	first.Extra["nested"].(map[string]any)["k"] = "changed"
	first.Extra["list"].([]any)[0] = 9.0
	if second.Step != 2 || second.Extra["nested"].(map[string]any)["k"] != "v" || second.Extra["list"].([]any)[0] != 1.0 {
		t.Fatalf("changing one row's nested values changed the next row's: %+v", second)
	}
}

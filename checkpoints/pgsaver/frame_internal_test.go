package pgsaver

import (
	"bytes"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// frameBody encodes a frame's checkpoint byte for byte as PutStep encodes
// f.Checkpoint(): sorted keys, the last entry of a name given twice,
// encoding/json's escapes (quotes, HTML, control and non-ASCII
// characters, U+2028), an empty or missing updated list, channels without
// a version left out, Next left out when nil and kept in plan order
// otherwise. A frame without Next is written as before Next was.
func TestFrameBody(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 11, 26, 5, 0, 0, 123456789, time.FixedZone("x", 3600))
	odd := []string{"a&b", "c<d>", "e\"f", "g\\h", "i\u2028j", "k\x01l", "mé", "z"}
	frames := map[string]*checkpoints.Frame{
		"empty": {ID: "1", TS: ts},
		"counter": {ID: "01a201c3-2d18-70f6-931a-7c7b0714615c", TS: ts,
			Channels: []string{"__start__", "branch:to:inc", "n"}, Versions: []int64{2, 43, 43},
			Seen: []checkpoints.SeenVersions{{Node: "__input__"}, {Node: "inc", Channels: []string{"branch:to:inc"}, Versions: []int64{42}},
				{Node: "__start__", Channels: []string{"__start__"}, Versions: []int64{1}}},
			UpdatedChannels: []string{"branch:to:inc", "n"}},
		"odd names": {ID: "<id&>", TS: ts, Channels: odd, Versions: []int64{1, 2, 0, 4, 5, 6, 7, 0},
			Seen: []checkpoints.SeenVersions{{Node: "n<1>", Channels: []string{"z", "a&b", "z"}, Versions: []int64{3, 1, 0}},
				{Node: "mé", Channels: odd, Versions: []int64{0, 0, 1, 0, 0, 0, 0, 9}}},
			UpdatedChannels: []string{"c<d>", "i\u2028j"}},
		"node twice, last wins": {ID: "2", TS: ts, Channels: []string{"a"}, Versions: []int64{1},
			Seen: []checkpoints.SeenVersions{{Node: "n", Channels: []string{"a"}, Versions: []int64{1}}, {Node: "m"},
				{Node: "n", Channels: []string{"a", "a"}, Versions: []int64{2, 3}}},
			UpdatedChannels: []string{}},
		"many nodes":   {ID: "3", TS: ts.UTC(), Channels: []string{"a", "b"}, Versions: []int64{0, 0}, Seen: manySeen(40)},
		"nothing next": {ID: "4", TS: ts, Channels: []string{"a"}, Versions: []int64{1}, Next: []string{}},
		"next in plan order, a node twice": {ID: "5", TS: ts, Channels: []string{"a"}, Versions: []int64{1},
			Next: []string{"tools", "tools", "agent"}, UpdatedChannels: []string{"a"}},
		"next with odd names": {ID: "6", TS: ts, Next: append([]string{""}, odd...)},
	}
	for name, f := range frames {
		cp, newV, err := f.Checkpoint()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := checkpoints.PreparePut(checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, newV)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := frameBody(f)
		if err != nil || !bytes.Equal(got, p.Body) {
			t.Errorf("%s: frame body\n%s (%v)\nPutStep's\n%s", name, got, err, p.Body)
		}
	}
	// Without Next, the body is byte for byte the one written before
	// Checkpoint had Next (listDecodeSeeds[1] was taken from PutFrame).
	if got, err := frameBody(frames["counter"]); err != nil || string(got) != listDecodeSeeds[1] {
		t.Errorf("counter: frame body\n%s (%v)\nwritten before Next\n%s", got, err, listDecodeSeeds[1])
	}
	// A time encoding/json cannot write fails as PutStep fails.
	bad := &checkpoints.Frame{ID: "x", TS: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	cp, newV, _ := bad.Checkpoint()
	_, want := checkpoints.PreparePut(checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, newV)
	if _, err := frameBody(bad); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("year 10000: err = %v, want %v", err, want)
	}
}

func manySeen(n int) []checkpoints.SeenVersions {
	var out []checkpoints.SeenVersions
	for i := range n {
		out = append(out, checkpoints.SeenVersions{Node: string(rune('z'-i%26)) + string(rune('a'+i/26)),
			Channels: []string{"b", "a"}, Versions: []int64{int64(i), 1}})
	}
	return out
}

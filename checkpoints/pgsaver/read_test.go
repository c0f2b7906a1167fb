package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// TestMetadataOnlyListingDecodesAsTheFullOne: a full listing gives back
// the checkpoints saved, whatever names they use; a metadata-only
// listing's tuples must be those of a full listing without values and
// writes, whatever the metadata holds, and a headers listing must keep
// V, ID, TS, Next and the metadata.
func TestMetadataOnlyListingDecodesAsTheFullOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgsaver.New(pgtest.Schema(t, nil), nil)
	mds := []checkpoints.Metadata{
		{Source: checkpoints.SourceInput, Step: -1, Parents: map[string]string{}},
		{Source: checkpoints.SourceLoop, Step: 0, RunID: "run-1", Extra: map[string]any{"user": "ann"}},
		{Source: checkpoints.SourceLoop, Step: 1, RunID: "run-1", Extra: map[string]any{"user": "ann"}},
		{Source: "qu\"ote\\é\u2028", Step: 1 << 40, RunID: "ru\tn-\u00e9", Parents: map[string]string{"": "p1", "node:a|b": "p2"},
			Extra: map[string]any{"nested": map[string]any{"a": []any{1.5, "x", nil, true}}, "Source": "not the source", "n": 1e21}},
		{Source: checkpoints.SourceUpdate, Step: 7, Extra: map[string]any{"empty": map[string]any{}, "list": []any{}}},
		{Source: checkpoints.SourceLoop, Step: 8, RunID: "run-2", Extra: map[string]any{
			"a": "x", "b": -0.5, "c": 1e-7, "d": 123456789012345678.0, "é": "ü", "ab": false, "abc": nil, "graph_id": "agent",
			"assistant_id": "a1", "langgraph_version": "1.0", "thread_id": "t", "user_id": "ann", "k\u0041": "escaped key", "tab": "\t"}},
	}
	cfg := checkpoints.Config{ThreadID: "t"}
	var cps []*checkpoints.Checkpoint
	for i, md := range mds {
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now().UTC(),
			ChannelValues:   map[string]json.RawMessage{"n": json.RawMessage(`1`)},
			ChannelVersions: map[string]int64{"n": int64(i + 1)},
			VersionsSeen:    map[string]map[string]int64{"a": {"n": int64(i)}},
			UpdatedChannels: []string{"n"},
			// Next unknown (nil), empty, a node twice, one escaped.
			Next: [][]string{nil, {}, {"a", "a", "b"}, {"n<1>", "a"}}[i%4],
		}
		if i == 3 {
			// Names encoding/json escapes, which the saver's own reader
			// leaves to the JSON libraries, after names it reads.
			cp.ChannelVersions["a&b"], cp.VersionsSeen["n<1>"] = 1, map[string]int64{"a&b": 1, "n": 2}
			cp.UpdatedChannels = []string{"n", "a&b"}
		}
		cps = append(cps, cp)
		var err error
		if cfg, err = s.Put(ctx, cfg, cp, md, map[string]int64{"n": int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutWrites(ctx, cfg, []checkpoints.Write{{Channel: "n", Value: json.RawMessage(`2`)}}, "task", ""); err != nil {
			t.Fatal(err)
		}
	}
	q := checkpoints.ListQuery{ThreadID: "t"}
	full, err := s.List(ctx, q, checkpoints.ListOptions{})
	if err != nil || len(full) != len(mds) {
		t.Fatalf("full listing: %d tuples, %v", len(full), err)
	}
	for i, f := range full { // newest first
		// The metadata as encoding/json reads back what was saved, through
		// jsonb (which orders keys and prints numbers its own way).
		saved, err := json.Marshal(mds[len(mds)-1-i])
		if err != nil {
			t.Fatal(err)
		}
		var md checkpoints.Metadata
		if err := json.Unmarshal(saved, &md); err != nil || !reflect.DeepEqual(f.Metadata, md) {
			t.Errorf("full listing, tuple %d: metadata\n got %#v\nwant %#v (%v)", i, f.Metadata, md, err)
		}
		put := cps[len(cps)-1-i]
		if got := f.Checkpoint; got.ID != put.ID || !got.TS.Equal(put.TS) || !reflect.DeepEqual(got.ChannelVersions, put.ChannelVersions) ||
			!reflect.DeepEqual(got.VersionsSeen, put.VersionsSeen) || !reflect.DeepEqual(got.UpdatedChannels, put.UpdatedChannels) ||
			!reflect.DeepEqual(got.Next, put.Next) {
			t.Errorf("full listing, tuple %d:\n got %+v\nwant %+v", i, got, put)
		}
	}
	for _, opts := range []checkpoints.ListOptions{{MetadataOnly: true}, {Headers: true}, {MetadataOnly: true, Headers: true}} {
		got, err := s.List(ctx, q, opts)
		if err != nil || len(got) != len(full) {
			t.Fatalf("%+v: %d tuples, %v", opts, len(got), err)
		}
		for i, f := range full {
			want := *f
			cp := *f.Checkpoint
			cp.ChannelValues = nil
			want.Checkpoint, want.PendingWrites = &cp, nil
			if opts.Headers {
				cp = checkpoints.Checkpoint{V: cp.V, ID: cp.ID, TS: cp.TS, Next: cp.Next}
				if len(want.Metadata.Parents) == 0 && len(got[i].Metadata.Parents) == 0 {
					// Headers may leave an empty Parents nil, or not.
					want.Metadata.Parents = got[i].Metadata.Parents
				}
			}
			if !reflect.DeepEqual(got[i], &want) {
				t.Errorf("%+v: tuple %d\n got %+v %+v\nwant %+v %+v", opts, i, got[i], got[i].Checkpoint, &want, want.Checkpoint)
			}
		}
	}
}

// TestMetadataOnlyListingOfTamperedMetadata: metadata that the full
// decode refuses is refused by a metadata-only listing too, and one it
// accepts is read the same.
func TestMetadataOnlyListingOfTamperedMetadata(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, metadata string
		ok             bool
	}{
		{"step not an integer", `{"source": "loop", "step": 1.5}`, false},
		{"step as a string", `{"source": "loop", "step": "1"}`, false},
		{"source not a string", `{"source": 42, "step": 1}`, false},
		{"parents not strings", `{"source": "loop", "step": 1, "parents": {"": 1}}`, false},
		{"an array", `[1, 2]`, false},
		{"a number", `7`, false},
		{"nulls", `{"source": null, "step": null, "run_id": null, "parents": null}`, true},
		{"no known keys", `{"x": 1}`, true},
		{"step with an exponent", `{"step": 1e2}`, true},
		{"null", `null`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Schema(t, nil)
			s := pgsaver.New(pool, nil)
			cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now().UTC(),
				ChannelVersions: map[string]int64{}, VersionsSeen: map[string]map[string]int64{}}
			if _, err := s.Put(ctx, checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `UPDATE checkpoints SET metadata = $1::jsonb`, tc.metadata); err != nil {
				t.Fatal(err)
			}
			full, fullErr := s.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{})
			got, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "t"}, checkpoints.ListOptions{MetadataOnly: true})
			if tc.ok != (fullErr == nil) {
				t.Fatalf("full listing: %v, want ok=%v", fullErr, tc.ok)
			}
			if !tc.ok {
				if !errors.Is(err, pgsaver.ErrCorrupt) || !errors.Is(fullErr, pgsaver.ErrCorrupt) {
					t.Fatalf("metadata-only listing: %v, full: %v; want both ErrCorrupt", err, fullErr)
				}
				return
			}
			if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0].Metadata, full[0].Metadata) {
				t.Fatalf("metadata-only listing: %+v, %v; want %+v", got, err, full[0].Metadata)
			}
		})
	}
}

// TestListingOverTheSimpleProtocol: a pool set to the simple protocol
// (as for PgBouncer in transaction mode) gets every column as text, which
// a metadata-only listing reads through Scan instead of raw; its pages
// are those of the default pool.
func TestListingOverTheSimpleProtocol(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	cfg := pool.Config().Copy()
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	simple, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(simple.Close)
	s := pgsaver.New(pool, nil)
	cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now().UTC(),
		ChannelValues: map[string]json.RawMessage{"n": json.RawMessage(`1`)}, ChannelVersions: map[string]int64{"n": 1},
		VersionsSeen: map[string]map[string]int64{"a": {"n": 0}}, UpdatedChannels: []string{"n"}, Next: []string{"a"}}
	cfgT, err := s.Put(ctx, checkpoints.Config{ThreadID: "t"}, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 0, Extra: map[string]any{"user": "ann"}}, map[string]int64{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	cp.ID = checkpoints.NewID()
	if _, err := s.Put(ctx, cfgT, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: 1}, map[string]int64{"n": 1}); err != nil {
		t.Fatal(err)
	}
	q := checkpoints.ListQuery{ThreadID: "t"}
	for _, opts := range []checkpoints.ListOptions{{MetadataOnly: true}, {Headers: true}} {
		want, err := s.List(ctx, q, opts)
		if err != nil || len(want) != 2 {
			t.Fatalf("%+v: %d tuples, %v", opts, len(want), err)
		}
		got, err := pgsaver.New(simple, nil).List(ctx, q, opts)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v over the simple protocol: %v\n got %+v\nwant %+v", opts, err, got, want)
		}
	}
}

// TestCopyAndPruneKeepNext: the statements that copy or keep rows
// (CopyThread, Prune) move a checkpoint's body as it was stored, so its
// Next reads back as put: nil, empty, a node twice.
func TestCopyAndPruneKeepNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgsaver.New(pgtest.Schema(t, nil), nil)
	nexts := [][]string{{"a", "a"}, nil, {}, {"b", "a", "b"}}
	cfg := checkpoints.Config{ThreadID: "src"}
	for i, next := range nexts {
		f := &checkpoints.Frame{ID: checkpoints.NewID(), TS: time.Now().UTC(), Channels: []string{"n"}, Versions: []int64{int64(i + 1)},
			New: []checkpoints.FrameValue{{Index: 0, Value: json.RawMessage(`1`)}}, Next: next}
		var err error
		if cfg, err = s.PutFrame(ctx, cfg, nil, f, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CopyThread(ctx, "src", "dst"); err != nil {
		t.Fatal(err)
	}
	same := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("%s: next = %#v, want %#v", what, got, want)
		}
	}
	for _, opts := range []checkpoints.ListOptions{{}, {Headers: true}} {
		page, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "dst"}, opts)
		if err != nil || len(page) != len(nexts) {
			t.Fatalf("copy, %+v: %d tuples, %v", opts, len(page), err)
		}
		for i, tu := range page {
			same(fmt.Sprintf("copy, %+v, checkpoint %d", opts, len(nexts)-1-i), tu.Checkpoint.Next, nexts[len(nexts)-1-i])
		}
	}
	if err := s.Prune(ctx, []string{"dst"}, checkpoints.KeepLatest); err != nil {
		t.Fatal(err)
	}
	tu, err := s.Get(ctx, checkpoints.Config{ThreadID: "dst"})
	if err != nil || tu == nil {
		t.Fatalf("get after prune: %+v, %v", tu, err)
	}
	same("pruned copy", tu.Checkpoint.Next, nexts[len(nexts)-1])
}

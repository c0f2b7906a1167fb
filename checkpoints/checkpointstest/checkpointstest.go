// Package checkpointstest is the conformance suite every checkpoints.Saver
// must pass, in the manner of river's riverdrivertest: a backend's test
// calls
//
//	checkpointstest.Exercise(t, func(t *testing.T) checkpoints.Saver { ... })
//
// and Exercise runs one parallel subtest per behaviour, each on a saver of
// its own (a saver must start empty: several cases list across all threads).
//
// # What it covers
//
// The cases port the behaviours of upstream's checkpointer suites as listed
// in reference/checkpointer-and-security.md: the JS spec's put, putWrites,
// getTuple, list (the full matrix of thread × namespace × limit × before ×
// filter, with every expected set computed from the fixture) and
// deleteThread cases 1–39, and the Python suite's Y1–Y15 (idempotent and
// special writes, value versioning, filters, copy, prune, delete for runs,
// NUL and surrogate handling, injection keys). Each subtest's name starts
// with the case number it covers.
//
// Not covered, on purpose:
//   - Cases 35 and 38 (migration of pending sends from v1 checkpoints): we
//     never read upstream's legacy data, so there is nothing to migrate.
//   - Y13 (merging the run's configurable keys into metadata): that is the
//     engine's job; a saver stores the metadata it is given (case 8).
//   - Y15's limit=0 returning nothing: in Go the zero Limit means "no
//     limit"; the suite checks that instead.
//   - Y11's stripping of NUL: we reject NUL (and lone surrogates) with
//     checkpoints.ErrInvalidValue instead of altering data; the suite checks
//     that the rejection is clean and that nothing was written.
package checkpointstest

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
)

// Exercise runs the conformance suite against the savers newSaver makes.
// newSaver is called once per subtest and must return an empty saver; it
// may register cleanups on t.
func Exercise(t *testing.T, newSaver func(t *testing.T) checkpoints.Saver) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newSaver(t))
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s checkpoints.Saver)
}

// cases is filled by the init functions of this package's files, one file
// per area of the Saver interface.
var cases []testCase

func register(name string, run func(t *testing.T, s checkpoints.Saver)) {
	cases = append(cases, testCase{name, run})
}

// CaseCount returns the number of subtests Exercise runs (not counting the
// nested table entries some of them run).
func CaseCount() int { return len(cases) }

// namespaces are the two namespaces upstream runs most cases in.
var namespaces = []string{"", "child"}

func ctx() context.Context { return context.Background() }

// raw encodes v as JSON, for fixture values.
func raw(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode fixture value: %v", err)
	}
	return b
}

// newCheckpoint builds a checkpoint with the given values (each encoded as
// JSON) and versions.
func newCheckpoint(t *testing.T, values map[string]any, versions map[string]int64) *checkpoints.Checkpoint {
	t.Helper()
	cp := &checkpoints.Checkpoint{
		V:               checkpoints.FormatVersion,
		ID:              checkpoints.NewID(),
		TS:              time.Now().UTC().Truncate(time.Microsecond),
		ChannelValues:   map[string]json.RawMessage{},
		ChannelVersions: versions,
		VersionsSeen:    map[string]map[string]int64{"": {"someChannel": 1}},
		UpdatedChannels: []string{},
	}
	if cp.ChannelVersions == nil {
		cp.ChannelVersions = map[string]int64{}
	}
	for k, v := range values {
		cp.ChannelValues[k] = raw(t, v)
	}
	return cp
}

func mustPut(t *testing.T, s checkpoints.Saver, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, newVersions map[string]int64) checkpoints.Config {
	t.Helper()
	got, err := s.Put(ctx(), cfg, cp, md, newVersions)
	if err != nil {
		t.Fatalf("Put(%+v, %s): %v", cfg, cp.ID, err)
	}
	return got
}

func mustWrite(t *testing.T, s checkpoints.Saver, cfg checkpoints.Config, task string, writes ...checkpoints.Write) {
	t.Helper()
	if err := s.PutWrites(ctx(), cfg, writes, task, ""); err != nil {
		t.Fatalf("PutWrites(%+v, %s): %v", cfg, task, err)
	}
}

func mustGet(t *testing.T, s checkpoints.Saver, cfg checkpoints.Config) *checkpoints.Tuple {
	t.Helper()
	got, err := s.Get(ctx(), cfg)
	if err != nil {
		t.Fatalf("Get(%+v): %v", cfg, err)
	}
	return got
}

func mustList(t *testing.T, s checkpoints.Saver, q checkpoints.ListQuery, opts checkpoints.ListOptions) []*checkpoints.Tuple {
	t.Helper()
	got, err := s.List(ctx(), q, opts)
	if err != nil {
		t.Fatalf("List(%+v, %+v): %v", q, opts, err)
	}
	return got
}

func ids(ts []*checkpoints.Tuple) []string {
	out := make([]string, len(ts))
	for i, tu := range ts {
		out[i] = tu.Config.CheckpointID
	}
	return out
}

func write(t *testing.T, channel string, v any) checkpoints.Write {
	t.Helper()
	return checkpoints.Write{Channel: channel, Value: raw(t, v)}
}

func pending(t *testing.T, task, channel string, v any) checkpoints.PendingWrite {
	t.Helper()
	return checkpoints.PendingWrite{TaskID: task, Channel: channel, Value: raw(t, v)}
}

// expectTuple fails unless got equals want: the same config, parent config,
// checkpoint (timestamps compared as instants, values as JSON bytes),
// metadata and pending writes. A nil and an empty write list are equal.
func expectTuple(t *testing.T, what string, got, want *checkpoints.Tuple) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
		return
	}
	if got.Config != want.Config {
		t.Errorf("%s: config = %+v, want %+v", what, got.Config, want.Config)
	}
	if !reflect.DeepEqual(got.ParentConfig, want.ParentConfig) {
		t.Errorf("%s: parent config = %+v, want %+v", what, got.ParentConfig, want.ParentConfig)
	}
	if (got.Checkpoint == nil) != (want.Checkpoint == nil) {
		t.Fatalf("%s: checkpoint = %v, want %v", what, got.Checkpoint, want.Checkpoint)
	}
	if got.Checkpoint != nil {
		g, w := *got.Checkpoint, *want.Checkpoint
		if !g.TS.Equal(w.TS) {
			t.Errorf("%s: ts = %v, want %v", what, g.TS, w.TS)
		}
		g.TS, w.TS = time.Time{}, time.Time{}
		if !equalValues(g.ChannelValues, w.ChannelValues) {
			t.Errorf("%s: channel values = %s, want %s", what, showValues(g.ChannelValues), showValues(w.ChannelValues))
		}
		g.ChannelValues, w.ChannelValues = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: checkpoint = %+v, want %+v", what, g, w)
		}
	}
	if !reflect.DeepEqual(got.Metadata, want.Metadata) {
		t.Errorf("%s: metadata = %#v, want %#v", what, got.Metadata, want.Metadata)
	}
	if len(got.PendingWrites) != 0 || len(want.PendingWrites) != 0 {
		if !slices.EqualFunc(got.PendingWrites, want.PendingWrites, func(a, b checkpoints.PendingWrite) bool {
			return a.TaskID == b.TaskID && a.Channel == b.Channel && bytes.Equal(a.Value, b.Value)
		}) {
			t.Errorf("%s: pending writes = %s, want %s", what, showWrites(got.PendingWrites), showWrites(want.PendingWrites))
		}
	}
}

func equalValues(a, b map[string]json.RawMessage) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return maps.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}

func showValues(m map[string]json.RawMessage) string {
	if m == nil {
		return "nil"
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func showWrites(ws []checkpoints.PendingWrite) string {
	var buf bytes.Buffer
	for _, w := range ws {
		buf.WriteString("(" + w.TaskID + " " + w.Channel + " " + string(w.Value) + ")")
	}
	return "[" + buf.String() + "]"
}

// stored returns the tuple a saver should give back for a checkpoint put
// with cfg and md whose readable values are values.
func stored(cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, values map[string]json.RawMessage, writes ...checkpoints.PendingWrite) *checkpoints.Tuple {
	c := *cp
	c.ChannelValues = values
	if c.ChannelValues == nil {
		c.ChannelValues = map[string]json.RawMessage{}
	}
	if md.Parents == nil {
		md.Parents = map[string]string{}
	}
	tu := &checkpoints.Tuple{
		Config:        checkpoints.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cp.ID},
		Checkpoint:    &c,
		Metadata:      md,
		PendingWrites: writes,
	}
	if cfg.CheckpointID != "" {
		tu.ParentConfig = &checkpoints.Config{ThreadID: cfg.ThreadID, Namespace: cfg.Namespace, CheckpointID: cfg.CheckpointID}
	}
	return tu
}

package pgsaver

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgtest"
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

// counterStep is a superstep of BenchmarkPGSuperstepSync's counter loop
// as the engine hands it to PutFrame (taken from a run): "inc" wrote n
// and its route, and the checkpoint that follows has n's new value inline.
func counterStep(parent, id string, n int) (checkpoints.Config, []checkpoints.TaskWrites, *checkpoints.Frame, checkpoints.Metadata) {
	v := json.RawMessage(strconv.Itoa(n))
	cfg := checkpoints.Config{ThreadID: "sync-1", CheckpointID: parent}
	writes := []checkpoints.TaskWrites{{TaskID: "89e36438-b5ec-a2bc-63e9-23715968a0ba",
		Writes: []checkpoints.Write{{Channel: "n", Value: v}, {Channel: "branch:to:inc", Value: json.RawMessage("null")}}}}
	f := &checkpoints.Frame{ID: id, TS: time.Date(2026, 11, 26, 18, 5, 26, 345650939, time.UTC),
		Channels: []string{"__pregel_tasks", "__start__", "branch:to:inc", "n"}, Versions: []int64{0, 2, int64(n + 2), int64(n + 2)},
		New: []checkpoints.FrameValue{{Index: 2}, {Index: 3, Value: v}}, UpdatedChannels: []string{"branch:to:inc", "n"}, Next: []string{"inc"},
		Seen: []checkpoints.SeenVersions{{Node: "__input__"}, {Node: "__start__", Channels: []string{"__start__"}, Versions: []int64{1}},
			{Node: "inc", Channels: []string{"branch:to:inc"}, Versions: []int64{int64(n + 1)}}}}
	if n == 0 {
		// The start step consumed __start__.
		f.New = append([]checkpoints.FrameValue{{Index: 1}}, f.New...)
	}
	md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: n, Parents: map[string]string{}}
	return cfg, writes, f, md
}

// counterInput is the input checkpoint of counterStep's run, remembered
// by s as the thread's head, as after its commit.
func counterInput(tb testing.TB, s *Saver) *checkpoints.Frame {
	tb.Helper()
	input := &checkpoints.Frame{ID: "01a21908-a389-7362-a72f-654d1cfa5ca4", TS: time.Now(),
		Channels: []string{"__pregel_tasks", "__start__", "branch:to:inc", "n"}, Versions: []int64{0, 1, 0, 0},
		New: []checkpoints.FrameValue{{Index: 1, Value: json.RawMessage(`{"n":0}`)}}, UpdatedChannels: []string{"__start__"}, Next: []string{"__start__"},
		Seen: []checkpoints.SeenVersions{{Node: "__input__"}}}
	in, _, err := frameInput(checkpoints.Config{ThreadID: "sync-1"}, nil, input, checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1, Parents: map[string]string{}})
	if err != nil {
		tb.Fatal(err)
	}
	s.remember(s.plan(in, nil, nil, true, false))
	return input
}

// A counter step's put goes as one statement whose parameters the saver
// encodes for the types the server gives them, with a fence (a durable
// run's step) as without: were a migration to change a column's type, or
// the plan an argument's, the put would quietly go back to pgx's
// encoding, and were a fence to take a statement of its own again, to a
// batch.
func TestCounterStepGoesEncoded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, tc := range []struct {
		name  string
		fence *checkpoints.Fence
		want  string
	}{
		{"unfenced", nil, sqlPutInline},
		{"fenced", &checkpoints.Fence{Thread: "sync-1", Token: 3}, sqlPutInlineFenced},
	} {
		sd, err := conn.Conn().Prepare(ctx, "", tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sd.ParamOIDs, paramOIDs[tc.want]) {
			t.Errorf("%s: the server types the put's parameters %v, the benchmark %v", tc.name, sd.ParamOIDs, paramOIDs[tc.want])
		}
		s := New(pool, nil)
		input := counterInput(t, s)
		in, rows, err := frameInput(counterStep(input.ID, "01a21908-a3c4-75f8-ab64-f5f29e0a9f0c", 0))
		if err != nil {
			t.Fatal(err)
		}
		qs := s.plan(in, rows, tc.fence, true, false).batch.QueuedQueries
		if len(qs) != 1 || qs[0].SQL != tc.want {
			t.Fatalf("%s: a counter step sends %d statements, want one, its put", tc.name, len(qs))
		}
		if _, ok := encodedStatement(qs[0].SQL); !ok {
			t.Errorf("%s: the put is not an encoded statement", tc.name)
		}
		var e paramEncoder
		if !e.encode(sd.ParamOIDs, qs[0].Arguments) {
			t.Errorf("%s: the saver does not encode a counter step's parameters: pgx would", tc.name)
		}
	}
}

// paramOIDs are the parameter types the server infers for the statements
// a counter step sends, by statement.
var paramOIDs = map[string][]uint32{
	sqlPutInline: {pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.ByteaOID, pgtype.JSONBOID,
		pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaOID},
	sqlPutInlineFenced: {pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.TextOID, pgtype.ByteaOID, pgtype.JSONBOID,
		pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaArrayOID, pgtype.ByteaOID,
		pgtype.TextOID, pgtype.Int8OID},
}

// BenchmarkPutFrameClient is the client's share of a superstep of
// BenchmarkPGSuperstepSync/putstep, without a server: PutFrame's checks
// and encoding, its plan, and the encoding of the statement's parameters
// (by the saver, as execEncoded does, or else by pgx, as pgx.Conn's Exec
// of a cached statement does) into the Bind message it sends. Each op is the next step of one thread, whose
// head the saver remembers as after a commit.
func BenchmarkPutFrameClient(b *testing.B) {
	pool, err := pgxpool.New(context.Background(), "postgres://bench@127.0.0.1:1/bench") // never connects
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	s := New(pool, nil)
	ids := [2]string{"01a21908-a3c4-75f8-ab64-f5f29e0a9f0c", "01a21908-a3c9-77d7-8244-c7bb919c4cfb"}
	m := pgtype.NewMap()
	var eqb pgx.ExtendedQueryBuilder
	var enc paramEncoder
	var msg []byte
	var first uint64 // the hash of the first op's Bind message
	op := 0
	type args struct {
		cfg    checkpoints.Config
		writes []checkpoints.TaskWrites
		f      *checkpoints.Frame
		md     checkpoints.Metadata
	}
	step := func(a args) {
		in, rows, err := frameInput(a.cfg, a.writes, a.f, a.md)
		if err != nil {
			b.Fatal(err)
		}
		plan := s.plan(in, rows, nil, true, false)
		for _, q := range plan.batch.QueuedQueries {
			oids, ok := paramOIDs[q.SQL]
			if !ok {
				b.Fatalf("step %d sends a statement the benchmark does not know:\n%s", a.md.Step, q.SQL)
			}
			bind := pgproto3.Bind{PreparedStatement: "stmt"}
			if _, ok := encodedStatement(q.SQL); ok && enc.encode(oids, q.Arguments) {
				bind.ParameterFormatCodes, bind.Parameters = enc.formats, enc.values
			} else {
				if err := eqb.Build(m, &pgconn.StatementDescription{Name: "stmt", SQL: q.SQL, ParamOIDs: oids}, q.Arguments); err != nil {
					b.Fatal(err)
				}
				bind.ParameterFormatCodes, bind.Parameters, bind.ResultFormatCodes = eqb.ParamFormats, eqb.ParamValues, eqb.ResultFormats
			}
			if msg, err = bind.Encode(msg[:0]); err != nil {
				b.Fatal(err)
			}
		}
		s.remember(plan)
		if op == 1 {
			first = xxh3.Hash(msg)
		}
	}
	// The run's input checkpoint and its first step make the thread's head.
	input := counterInput(b, s)
	var start args
	var next [2]args
	start.cfg, start.writes, start.f, start.md = counterStep(input.ID, ids[0], 0)
	step(start)
	// The engine builds a step's frame: the benchmark alternates two.
	for i := range next {
		next[i].cfg, next[i].writes, next[i].f, next[i].md = counterStep(ids[i], ids[1-i], 42)
	}
	b.ReportAllocs()
	for b.Loop() {
		op++
		step(next[(op+1)%2])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/step")
	b.Logf("Bind message of a step: %d bytes, the first's xxh3 %x", len(msg), first)
}

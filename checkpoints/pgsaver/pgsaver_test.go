package pgsaver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/checkpointstest"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// appendChain saves steps checkpoints in one thread, each appending one
// message of about msgSize bytes to the "messages" channel, and returns
// the configs and the raw bytes appended (each message's JSON).
func appendChain(t testing.TB, s checkpoints.Saver, thread string, steps, msgSize int) ([]checkpoints.Config, int) {
	t.Helper()
	ctx := context.Background()
	cfg := checkpoints.Config{ThreadID: thread}
	var msgs []string
	var cfgs []checkpoints.Config
	appended := 0
	for i := range steps {
		msg := fmt.Sprintf("%04d:%s", i, strings.Repeat("x", msgSize-7))
		b, _ := json.Marshal(msg)
		appended += len(b)
		msgs = append(msgs, msg)
		val, _ := json.Marshal(msgs)
		v := int64(i + 1)
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now().UTC(),
			ChannelValues:   map[string]json.RawMessage{"messages": val},
			ChannelVersions: map[string]int64{"messages": v, "other": 1},
			VersionsSeen:    map[string]map[string]int64{"agent": {"messages": v - 1}},
		}
		var err error
		cfg, err = s.Put(ctx, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}, map[string]int64{"messages": v})
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs, appended
}

func blobBytes(t *testing.T, pool *pgxpool.Pool, thread string) (data, rows int64) {
	t.Helper()
	err := pool.QueryRow(context.Background(),
		`SELECT coalesce(sum(octet_length(data)), 0), count(*) FROM checkpoint_blobs WHERE thread_id = $1`, thread).Scan(&data, &rows)
	if err != nil {
		t.Fatal(err)
	}
	return data, rows
}

func expectMessages(t *testing.T, s checkpoints.Saver, cfg checkpoints.Config, n int) {
	t.Helper()
	tu, err := s.Get(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	if err := json.Unmarshal(tu.Checkpoint.ChannelValues["messages"], &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != n || (n > 0 && !strings.HasPrefix(msgs[n-1], fmt.Sprintf("%04d:", n-1))) {
		t.Fatalf("%s: %d messages, want %d", cfg.CheckpointID, len(msgs), n)
	}
}

// TestAppendedListStorageIsLinear is the quadratic-storage complaint: 500
// steps each appending a 200-byte message must store at most 3x the bytes
// appended, where storing the whole list each step would store ~250x.
func TestAppendedListStorageIsLinear(t *testing.T) {
	t.Parallel()
	const steps, size = 500, 200
	for _, tc := range []struct {
		name     string
		opts     *pgsaver.Options
		maxRatio float64
	}{
		{"deltas", nil, 3},
		{"full values", &pgsaver.Options{LastValueCacheBytes: -1}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Schema(t, nil)
			s := pgsaver.New(pool, tc.opts)
			cfgs, appended := appendChain(t, s, "chat", steps, size)
			data, rows := blobBytes(t, pool, "chat")
			var table int64
			if err := pool.QueryRow(context.Background(), `SELECT pg_total_relation_size('checkpoint_blobs')`).Scan(&table); err != nil {
				t.Fatal(err)
			}
			ratio := float64(data) / float64(appended)
			t.Logf("%s: appended %d bytes in %d steps; blobs: %d rows, %d data bytes (ratio %.2f), table with indexes and TOAST %d bytes (ratio %.2f)",
				tc.name, appended, steps, rows, data, ratio, table, float64(table)/float64(appended))
			if ratio > tc.maxRatio {
				t.Errorf("stored %.2fx the appended bytes, want at most %.0fx", ratio, tc.maxRatio)
			}
			for _, i := range []int{0, 1, 2, 99, 250, 256, 257, 498, 499} {
				expectMessages(t, s, cfgs[i], i+1)
			}
			// A fresh saver (another process) reads the same values.
			expectMessages(t, pgsaver.New(pool, nil), cfgs[steps-1], steps)
		})
	}
}

// TestStaleDeltaBaseFallsBackToFullValue: another process deletes the
// thread this saver remembers the last value of; the next append must not
// reference the deleted blob.
func TestStaleDeltaBaseFallsBackToFullValue(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, nil)
	a, other := pgsaver.New(pool, nil), pgsaver.New(pool, nil)
	appendChain(t, a, "chat", 5, 50)
	if err := other.DeleteThread(context.Background(), "chat"); err != nil {
		t.Fatal(err)
	}
	cfgs, _ := appendChain(t, a, "chat", 6, 50)
	expectMessages(t, a, cfgs[5], 6)
	if _, rows := blobBytes(t, pool, "chat"); rows == 0 {
		t.Fatal("no blobs written")
	}
}

func TestTamperedRowsAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name, sql string
	}{
		{"unknown encoding", `UPDATE checkpoint_blobs SET encoding = 'pickle'`},
		{"changed value", `UPDATE checkpoint_blobs SET data = convert_to('["evil"]', 'UTF8') WHERE encoding = 'json'`},
		{"changed delta", `UPDATE checkpoint_blobs SET data = convert_to('"evil"', 'UTF8') WHERE encoding = 'json-append'`},
		{"missing blob", `UPDATE checkpoints SET value_hashes = ARRAY[decode('00000000000000000000000000000000', 'hex')], value_inline = ARRAY[NULL::bytea]`},
		{"unknown write encoding", `UPDATE checkpoint_writes SET encoding = 'msgpack'`},
		{"inline value not JSON", `UPDATE checkpoints SET value_hashes = ARRAY[NULL::bytea], value_inline = ARRAY[convert_to('{', 'UTF8')]`},
		{"value both inline and in a blob", `UPDATE checkpoints SET value_inline = ARRAY[convert_to('1', 'UTF8')]`},
		// A read follows a chain a bounded number of links, then fails.
		{"delta chain in a cycle", `UPDATE checkpoint_blobs SET encoding = 'json-append', base = hash WHERE encoding = 'json'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.Schema(t, nil)
			s := pgsaver.New(pool, nil)
			// 100-byte messages: the first list is small enough to be
			// inline, the second is a blob, the third a delta on it.
			cfgs, _ := appendChain(t, s, "chat", 3, 100)
			last := cfgs[2]
			if err := s.PutWrites(ctx, last, []checkpoints.Write{{Channel: "messages", Value: json.RawMessage(`["x"]`)}}, "task", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, last); !errors.Is(err, pgsaver.ErrCorrupt) {
				t.Fatalf("Get = %v, want ErrCorrupt", err)
			}
			if _, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "chat"}, checkpoints.ListOptions{}); !errors.Is(err, pgsaver.ErrCorrupt) {
				t.Fatalf("List = %v, want ErrCorrupt", err)
			}
		})
	}
}

func tables(t testing.TB, pool *pgxpool.Pool) []string {
	t.Helper()
	return queryStrings(t, pool,
		`SELECT relname || ':' || relkind::text FROM pg_class WHERE relnamespace = current_schema()::regnamespace ORDER BY 1`)
}

// queryStrings runs sql, a query of one text column, and returns its rows.
func queryStrings(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzFilter checks the filter builder against the memory saver's
// containment: for any key and value, the Postgres saver returns exactly
// the checkpoints the memory saver returns (or the same kind of error),
// and the schema never changes.
func FuzzFilter(f *testing.F) {
	for _, k := range checkpointstest.InjectionKeys {
		f.Add(k, `"public"`)
		f.Add(k, `1`)
	}
	for _, seed := range [][2]string{
		{"source", `"loop"`}, {"step", `1`}, {"step", `1.0`}, {"tags", `["a"]`}, {"tags", `[]`},
		{"user", `{"name":"ann"}`}, {"user", `{}`}, {"score", `null`}, {"my_key", `"\u0000abc"`},
		{"k", `"\ud800"`}, {"a.b", `1`}, {"123abc", `true`}, {"", `""`}, {"\x00", `1`}, {"run_id", `"r1"`},
	} {
		f.Add(seed[0], seed[1])
	}
	pool := pgtest.Schema(f, nil)
	pg := pgsaver.New(pool, nil)
	mem := checkpoints.NewMemory()
	ctx := context.Background()
	for i, extra := range []map[string]any{
		{"tags": []any{"a", "b"}, "user": map[string]any{"name": "ann"}, "score": nil},
		{"tags": []any{}, "a.b": 1, "123abc": true, "": ""},
		{"user": map[string]any{"name": "bob", "x": []any{1, 2}}, "score": 1.5},
	} {
		for _, s := range []checkpoints.Saver{pg, mem} {
			cp := &checkpoints.Checkpoint{V: 1, ID: fmt.Sprintf("id-%d", i), ChannelVersions: map[string]int64{}}
			md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: fmt.Sprintf("r%d", i), Extra: extra}
			if _, err := s.Put(ctx, checkpoints.Config{ThreadID: fmt.Sprintf("t%d", i%2)}, cp, md, nil); err != nil {
				f.Fatal(err)
			}
		}
	}
	schema := tables(f, pool)
	f.Fuzz(func(t *testing.T, key, value string) {
		var v any = value
		if json.Valid([]byte(value)) {
			v = json.RawMessage(value)
		}
		opts := checkpoints.ListOptions{Filter: map[string]any{key: v}, MetadataOnly: true}
		want, werr := mem.List(ctx, checkpoints.ListQuery{AllNamespaces: true}, opts)
		got, gerr := pg.List(ctx, checkpoints.ListQuery{AllNamespaces: true}, opts)
		if (werr == nil) != (gerr == nil) || (werr != nil && !errors.Is(gerr, checkpoints.ErrInvalidFilter)) {
			t.Fatalf("filter {%q: %s}: memory error %v, postgres error %v", key, value, werr, gerr)
		}
		ids := func(ts []*checkpoints.Tuple) (out []string) {
			for _, tu := range ts {
				out = append(out, tu.Config.ThreadID+"/"+tu.Config.CheckpointID)
			}
			return out
		}
		if !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("filter {%q: %s}: postgres %v, memory %v", key, value, ids(got), ids(want))
		}
		if now := tables(t, pool); !slices.Equal(now, schema) {
			t.Fatalf("filter {%q: %s} changed the schema: %v", key, value, now)
		}
	})
}

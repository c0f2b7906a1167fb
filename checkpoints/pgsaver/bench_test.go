package pgsaver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// floorInsert is the physical floor of a superstep: one INSERT of a row
// shaped like a checkpoint of the counter loop (the same columns, a body
// and metadata of the same size, three small values), committed, on the
// same pool. It is a plain INSERT with its seq given by the client.
func floorInsert(b *testing.B, pool *pgxpool.Pool, i int) {
	_, err := pool.Exec(context.Background(), `
		INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, seq, parent_checkpoint_id, checkpoint, metadata,
		                         value_channels, value_versions, value_hashes, value_inline)
		VALUES ('floor', '', $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9)`,
		checkpoints.NewID(), i, floorParent, floorBody, `{"parents":{},"source":"loop","step":42}`,
		[]string{"__start__", "branch:to:inc", "n"}, []int64{2, 43, 43}, [][]byte{nil, nil, nil},
		[][]byte{[]byte(`{"n":0}`), []byte("null"), []byte("42")})
	if err != nil {
		b.Fatal(err)
	}
}

var (
	floorParent = checkpoints.NewID()
	floorBody   = []byte(`{"v":1,"id":"01a201c3-2d18-70f6-931a-7c7b0714615c","ts":"2026-01-01T00:00:00.123456Z","channel_values":null,` +
		`"channel_versions":{"__start__":2,"branch:to:inc":43,"n":43},` +
		`"versions_seen":{"__input__":{},"__start__":{"__start__":1},"inc":{"branch:to:inc":42}},"updated_channels":["branch:to:inc","n"]}`)
)

// BenchmarkPGFloorInsertCommit is floorInsert alone, loopSupersteps
// commits an op: as many as a run of BenchmarkPGSuperstepSync saves, so
// that under the same -benchtime (100x in README's figures) the floor is
// measured over as many commits as the superstep it is compared with,
// not over a sample a hundredth of its size. ns/commit is the floor
// (B/op and allocs/op are a run's 102 commits').
func BenchmarkPGFloorInsertCommit(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		for range loopSupersteps {
			i++
			floorInsert(b, pool, i)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/commit")
}

// loopSteps is the counter loop's length in BenchmarkPGSuperstepSync: 100
// "inc" supersteps after the input checkpoint.
const loopSteps = 100

// loopSupersteps is how many supersteps, each saving one checkpoint, a run
// of the counter loop makes: the input checkpoint (step -1), the start
// step (0) and the loopSteps "inc" steps. BenchmarkPGSuperstepSync checks
// it against the checkpoints its first run saved.
const loopSupersteps = loopSteps + 2

type counterState struct {
	N int `json:"n"`
}

// counterLoop compiles the engine's counter loop on saver: one node "inc"
// adding one to n, routed back to itself until n reaches loopSteps.
func counterLoop(b *testing.B, saver checkpoints.Saver) *engine.Graph[counterState] {
	b.Helper()
	g := engine.NewStateGraph[counterState]()
	g.AddNode("inc", func(_ context.Context, s counterState) (engine.Output, error) {
		return engine.Update{"n": s.N + 1}, nil
	})
	g.AddEdge(engine.Start, "inc")
	g.AddConditionalEdges("inc", func(_ context.Context, s counterState) (engine.Route, error) {
		if s.N >= loopSteps {
			return engine.To(engine.End), nil
		}
		return engine.To("inc"), nil
	}, nil)
	cg, err := g.Compile(engine.CompileOptions{Checkpointer: saver})
	if err != nil {
		b.Fatal(err)
	}
	return cg
}

// BenchmarkPGSuperstepSync runs the engine's counter loop on the Postgres
// saver with durability sync: every superstep saves the task's writes and
// the next checkpoint before the next superstep starts. ns/superstep
// divides a run's time by its loopSupersteps, the checkpoints it saves;
// the run also reads the thread once, when it starts.
//
// x-floor is the cost of a superstep over the floor insert, measured in
// the same benchmark and interleaved with the runs (a few floor inserts
// after every run), so that load on the machine moves both alike.
//
// "putstep" is the engine as it is: the saver is a checkpoints.StepSaver,
// so each superstep is one PutStep, one round trip and one commit.
// "separate" hides PutStep, as a saver without it would: a PutWrites and
// a Put per superstep, two round trips and two commits, so at least twice
// the floor. "putstep-fenced" is "putstep" as a durable run does it: every
// PutStep carries the thread's lease fence, checked by studio_fence in
// the same round trip.
func BenchmarkPGSuperstepSync(b *testing.B) {
	for _, mode := range []string{"putstep", "separate", "putstep-fenced"} {
		b.Run(mode, func(b *testing.B) {
			pool := pgtest.Schema(b, nil)
			var saver checkpoints.Saver = pgsaver.New(pool, nil)
			if mode == "separate" {
				saver = plainSaver{saver}
			}
			cg := counterLoop(b, saver)
			ctx := context.Background()
			const floorPerRun = 20
			var stepTime, floorTime time.Duration
			floorN, runs := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				runs++
				thread := fmt.Sprintf("sync-%d", runs)
				rctx := ctx
				if mode == "putstep-fenced" {
					pgsaver.HoldLease(b, pool, thread, 1)
					rctx = checkpoints.WithFence(ctx, checkpoints.Fence{Thread: thread, Token: 1})
				}
				start := time.Now()
				out, err := cg.Invoke(rctx, engine.Update{"n": 0}, &engine.RunOptions{ThreadID: thread, Durability: engine.DurabilitySync})
				stepTime += time.Since(start)
				if err != nil || out.N != loopSteps {
					b.Fatalf("run %d: %+v, %v", runs, out, err)
				}
				if runs == 1 {
					var saved int
					if err := pool.QueryRow(ctx, `SELECT count(*) FROM checkpoints WHERE thread_id = $1`, thread).Scan(&saved); err != nil || saved != loopSupersteps {
						b.Fatalf("a run saved %d checkpoints (%v), want %d", saved, err, loopSupersteps)
					}
				}
				start = time.Now()
				for range floorPerRun {
					floorN++
					floorInsert(b, pool, floorN)
				}
				floorTime += time.Since(start)
			}
			perStep := float64(stepTime.Nanoseconds()) / float64(runs*loopSupersteps)
			floor := float64(floorTime.Nanoseconds()) / float64(floorN)
			b.ReportMetric(perStep, "ns/superstep")
			b.ReportMetric(floor, "ns/floor")
			b.ReportMetric(perStep/floor, "x-floor")
		})
	}
}

// plainSaver hides every method but the Saver interface's, so the engine
// cannot find PutStep.
type plainSaver struct{ checkpoints.Saver }

// floorNs is the floor insert's time (floorInsert), the mean of 300 on
// pool, for a benchmark to measure itself against just after.
func floorNs(b *testing.B, pool *pgxpool.Pool) float64 {
	b.Helper()
	const floorRuns = 300
	start := time.Now()
	for i := range floorRuns {
		floorInsert(b, pool, i)
	}
	return float64(time.Since(start).Nanoseconds()) / floorRuns
}

// BenchmarkPGPut is one superstep's checkpoint: a put with one changed
// small channel, in its own transaction. x-floor is its cost over the
// floor insert measured on the same pool just before.
func BenchmarkPGPut(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	s := pgsaver.New(pool, nil)
	ctx := context.Background()
	floor := floorNs(b, pool)

	cfg := checkpoints.Config{ThreadID: "bench"}
	v := int64(0)
	put := func() {
		v++
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"counter": json.RawMessage(fmt.Sprint(v))},
			ChannelVersions: map[string]int64{"counter": v, "messages": 1, "question": 1},
			VersionsSeen:    map[string]map[string]int64{"agent": {"counter": v - 1}},
			UpdatedChannels: []string{"counter"},
		}
		var err error
		cfg, err = s.Put(ctx, cfg, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: int(v)}, map[string]int64{"counter": v})
		if err != nil {
			b.Fatal(err)
		}
	}
	put()
	b.ReportAllocs()
	for b.Loop() {
		put()
	}
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perOp/1e3, "µs/put")
	b.ReportMetric(perOp/floor, "x-floor")
}

// BenchmarkPGPutWrites is a task's writes saved on their own (a task that
// finished before its siblings): one write, in its own transaction, with
// and without its lease's fence checked. x-floor is its cost over the
// floor insert measured on the same pool just before.
func BenchmarkPGPutWrites(b *testing.B) {
	for _, mode := range []string{"unfenced", "fenced"} {
		b.Run(mode, func(b *testing.B) {
			pool := pgtest.Schema(b, nil)
			s := pgsaver.New(pool, nil)
			ctx := context.Background()
			floor := floorNs(b, pool)
			cfg := checkpoints.Config{ThreadID: "bench"}
			if mode == "fenced" {
				pgsaver.HoldLease(b, pool, "bench", 1)
				ctx = checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "bench", Token: 1})
			}
			cfg, err := s.Put(ctx, cfg, &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
				ChannelValues: map[string]json.RawMessage{"n": json.RawMessage("0")}, ChannelVersions: map[string]int64{"n": 1}},
				checkpoints.Metadata{Source: checkpoints.SourceInput, Step: -1}, map[string]int64{"n": 1})
			if err != nil {
				b.Fatal(err)
			}
			writes := []checkpoints.Write{{Channel: "n", Value: json.RawMessage("1")}}
			task := 0
			b.ReportAllocs()
			for b.Loop() {
				task++
				if err := s.PutWrites(ctx, cfg, writes, strconv.Itoa(task), ""); err != nil {
					b.Fatal(err)
				}
			}
			perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(perOp/1e3, "µs/put")
			b.ReportMetric(perOp/floor, "x-floor")
		})
	}
}

// historyThread saves a thread of n checkpoints shaped like an agent's:
// a growing message list, a counter, metadata and a write per checkpoint.
func historyThread(b *testing.B, s checkpoints.Saver, n int) []checkpoints.Config {
	b.Helper()
	ctx := context.Background()
	cfg := checkpoints.Config{ThreadID: "history"}
	var cfgs []checkpoints.Config
	var msgs []string
	for i := range n {
		msgs = append(msgs, fmt.Sprintf("message %d: the quick brown fox jumps over the lazy dog", i))
		val, _ := json.Marshal(msgs)
		v := int64(i + 1)
		cp := &checkpoints.Checkpoint{
			V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
			ChannelValues:   map[string]json.RawMessage{"messages": val, "step": json.RawMessage(fmt.Sprint(i))},
			ChannelVersions: map[string]int64{"messages": v, "step": v, "config": 1},
			VersionsSeen:    map[string]map[string]int64{"agent": {"messages": v - 1}, "tools": {"messages": v - 1}},
			UpdatedChannels: []string{"messages", "step"},
			Next:            nextNode[i%2], // as the engine saves it
		}
		md := checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i, RunID: "run-1", Extra: map[string]any{"user": "ann"}}
		var err error
		if cfg, err = s.Put(ctx, cfg, cp, md, map[string]int64{"messages": v, "step": v}); err != nil {
			b.Fatal(err)
		}
		if err := s.PutWrites(ctx, cfg, []checkpoints.Write{{Channel: "messages", Value: json.RawMessage(`["reply"]`)}}, "task-"+fmt.Sprint(i), ""); err != nil {
			b.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// nextNode is the next task of historyThread's checkpoints, by step: an
// agent and its tools take turns.
var nextNode = [2][]string{{"tools"}, {"agent"}}

// sqlHistoryFloor is the index scan a history page needs and nothing more:
// the newest 50 rows of one thread and namespace in the order of the
// (thread_id, checkpoint_ns, seq DESC) index, with the columns a
// metadata-only page returns (ids, parent id, checkpoint body, metadata).
const sqlHistoryFloor = `SELECT c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint, c.metadata
FROM checkpoints c WHERE c.thread_id = $1 AND c.checkpoint_ns = $2 ORDER BY c.seq DESC LIMIT $3`

// historyFloor is the floor of a history page: sqlHistoryFloor read on the
// same pool, each row's columns taken as the raw bytes the server sent
// (no copy, no JSON decoding, nothing allocated per row by the caller).
// It returns the number of rows so that the caller can check them.
func historyFloor(b *testing.B, pool *pgxpool.Pool) int {
	n, size := rawScan(b, pool, sqlHistoryFloor, "history", "", 50)
	if size == 0 {
		b.Fatalf("floor scan: %d bytes", size)
	}
	return n
}

// rawScan runs sql on pool and reads its rows as the raw bytes the server
// sent, as a floor does: it returns how many rows and bytes came.
func rawScan(b *testing.B, pool *pgxpool.Pool, sql string, args ...any) (n, size int) {
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		for _, v := range rows.RawValues() {
			size += len(v)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return n, size
}

// BenchmarkPGHistoryPage lists the newest 50 of a thread's 1,000
// checkpoints, metadata only, as a history page does: the Studio's
// checkpoint tree and engine.GetStateHistory with MetadataOnly ask for
// headers, which carry each checkpoint's id, parent, time, metadata and
// next tasks (ListOptions.Headers), not its version maps.
//
// x-floor is its cost over historyFloor, the raw index scan of the same
// rows and columns, interleaved with the pages (one floor scan after
// every page) so that load on the machine moves both alike.
func BenchmarkPGHistoryPage(b *testing.B) {
	benchHistoryPage(b, checkpoints.ListOptions{Limit: 50, MetadataOnly: true, Headers: true}, func(page []*checkpoints.Tuple) bool {
		return !page[0].Checkpoint.TS.IsZero() && page[0].Metadata.Extra["user"] == "ann" &&
			len(page[0].Checkpoint.Next) == 1 && page[0].Checkpoint.Next[0] == "agent"
	})
}

// benchHistoryPage lists the newest 50 of historyThread's 1,000
// checkpoints with opts, each page followed by its floor scan, checks each
// page (50 tuples, and check if given) and reports ms/page, ms/floor and
// x-floor.
func benchHistoryPage(b *testing.B, opts checkpoints.ListOptions, check func([]*checkpoints.Tuple) bool) {
	pool := pgtest.Schema(b, nil)
	s := pgsaver.New(pool, nil)
	historyThread(b, s, 1000)
	ctx := context.Background()
	var pageTime, floorTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		page, err := s.List(ctx, checkpoints.ListQuery{ThreadID: "history"}, opts)
		pageTime += time.Since(start)
		if err != nil || len(page) != 50 || (check != nil && !check(page)) {
			b.Fatalf("%d tuples, %v", len(page), err)
		}
		start = time.Now()
		n := historyFloor(b, pool)
		floorTime += time.Since(start)
		if n != 50 {
			b.Fatalf("floor scan: %d rows", n)
		}
	}
	page := float64(pageTime.Nanoseconds()) / 1e6 / float64(b.N)
	floor := float64(floorTime.Nanoseconds()) / 1e6 / float64(b.N)
	b.ReportMetric(page, "ms/page")
	b.ReportMetric(floor, "ms/floor")
	b.ReportMetric(page/floor, "x-floor")
}

// BenchmarkPGHistoryPageFloor is historyFloor alone, the raw metadata-only
// index scan BenchmarkPGHistoryPage is compared with.
func BenchmarkPGHistoryPageFloor(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	historyThread(b, pgsaver.New(pool, nil), 1000)
	b.ReportAllocs()
	for b.Loop() {
		if n := historyFloor(b, pool); n != 50 {
			b.Fatalf("floor scan: %d rows", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/floor")
}

// sqlGetFloor is the floor of a Get: the checkpoint row's primary-key
// lookup with the columns Get reads from it, and nothing more (no blobs,
// no writes).
const sqlGetFloor = `SELECT checkpoint_id, parent_checkpoint_id, checkpoint, metadata, value_channels, value_hashes, value_inline
FROM checkpoints WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3`

// getFloor reads sqlGetFloor on pool, taking the columns as the raw bytes
// the server sent.
func getFloor(b *testing.B, pool *pgxpool.Pool, cfg checkpoints.Config) {
	if n, size := rawScan(b, pool, sqlGetFloor, cfg.ThreadID, cfg.Namespace, cfg.CheckpointID); n != 1 || size == 0 {
		b.Fatalf("floor lookup: %d rows, %d bytes", n, size)
	}
}

// BenchmarkPGGetStateAt reads a random checkpoint of a 1,000-checkpoint
// thread whose message list grows every step, as time travel does.
//
// x-floor is its cost over getFloor, the primary-key lookup of the same
// checkpoint row, interleaved with the reads (one lookup after every
// Get) so that load on the machine moves both alike. B/op and allocs/op
// include the floor's few.
func BenchmarkPGGetStateAt(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	s := pgsaver.New(pool, nil)
	cfgs := historyThread(b, s, 1000)
	benchGetStateAt(b, pool, s, cfgs)
}

func benchGetStateAt(b *testing.B, pool *pgxpool.Pool, s checkpoints.Saver, cfgs []checkpoints.Config) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	var getTime, floorTime time.Duration
	b.ReportAllocs()
	for b.Loop() {
		cfg := cfgs[rng.IntN(len(cfgs))]
		start := time.Now()
		tu, err := s.Get(ctx, cfg)
		getTime += time.Since(start)
		if err != nil || tu == nil || len(tu.PendingWrites) != 1 || len(tu.Checkpoint.ChannelValues) != 2 {
			b.Fatalf("Get(%v) = %+v, %v", cfg, tu, err)
		}
		start = time.Now()
		getFloor(b, pool, cfg)
		floorTime += time.Since(start)
	}
	get := float64(getTime.Nanoseconds()) / float64(b.N)
	floor := float64(floorTime.Nanoseconds()) / float64(b.N)
	b.ReportMetric(get, "ns/get")
	b.ReportMetric(floor, "ns/floor")
	b.ReportMetric(get/floor, "x-floor")
}

// countingSaver sums the bytes of the channel values handed to Put (raw)
// and the bytes they add over the channel's previous value when they
// extend it as an appended list does (appended; a value that does not
// extend its previous one counts whole).
type countingSaver struct {
	checkpoints.Saver
	raw, appended int
	last          map[string][]byte
}

func (c *countingSaver) Put(ctx context.Context, cfg checkpoints.Config, cp *checkpoints.Checkpoint, md checkpoints.Metadata, newVersions map[string]int64) (checkpoints.Config, error) {
	if c.last == nil {
		c.last = map[string][]byte{}
	}
	for ch, v := range cp.ChannelValues {
		c.raw += len(v)
		prev := c.last[ch]
		if n := len(prev); n > 2 && len(v) > n && string(v[:n-1]) == string(prev[:n-1]) {
			c.appended += len(v) - n
		} else {
			c.appended += len(v)
		}
		c.last[ch] = v
	}
	return c.Saver.Put(ctx, cfg, cp, md, newVersions)
}

// sqlThreadStorage is the bytes a thread's checkpoints and blobs take in
// their tables (each row as stored: pg_column_size of the row, its header
// and its columns, compressed where Postgres compressed them), and the
// bytes of its blobs' data uncompressed.
const sqlThreadStorage = `SELECT
    (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM checkpoints c WHERE c.thread_id = $1)
  + (SELECT coalesce(sum(pg_column_size(b.*)), 0) FROM checkpoint_blobs b WHERE b.thread_id = $1),
    (SELECT coalesce(sum(octet_length(b.data)), 0) FROM checkpoint_blobs b WHERE b.thread_id = $1)`

// historyStorage saves historyThread's 1,000 checkpoints on a saver with
// opts and returns the saver, the configs, and a function that reports
// (after the benchmark's loop, which drops metrics reported before it)
// x-raw, the bytes the thread's rows take over the raw bytes of the
// channel values handed to Put, blob-x-appended, its blobs' data
// (uncompressed) over the bytes those values appended (what storing only
// the new messages would take), and rows-x-appended, all its rows
// (checkpoints with their bodies and metadata, and blobs) over those
// same appended bytes.
func historyStorage(b *testing.B, pool *pgxpool.Pool, opts *pgsaver.Options) (*pgsaver.Saver, []checkpoints.Config, func()) {
	s := pgsaver.New(pool, opts)
	c := &countingSaver{Saver: s}
	cfgs := historyThread(b, c, 1000)
	var stored, blobData int64
	if err := pool.QueryRow(context.Background(), sqlThreadStorage, "history").Scan(&stored, &blobData); err != nil {
		b.Fatal(err)
	}
	report := func() {
		b.ReportMetric(float64(stored)/float64(c.raw), "x-raw")
		b.ReportMetric(float64(blobData)/float64(c.appended), "blob-x-appended")
		b.ReportMetric(float64(stored)/float64(c.appended), "rows-x-appended")
	}
	return s, cfgs, report
}

// BenchmarkPGHistoryStorage is the storage of BenchmarkPGGetStateAt's
// thread (1,000 checkpoints, a message list growing every step), as
// historyStorage reports it. The loop measures only the query that sums
// the storage.
func BenchmarkPGHistoryStorage(b *testing.B) {
	pool := pgtest.Schema(b, nil)
	_, _, report := historyStorage(b, pool, nil)
	for b.Loop() {
		var stored, blobData int64
		if err := pool.QueryRow(context.Background(), sqlThreadStorage, "history").Scan(&stored, &blobData); err != nil {
			b.Fatal(err)
		}
	}
	report()
}

// BenchmarkPGDeltaChain is BenchmarkPGGetStateAt and
// BenchmarkPGHistoryStorage together for several ways of bounding the
// delta chain a read replays, to choose the default from: skip deltas of
// several fan-outs, and plain deltas on the previous value with a full
// snapshot every k (a fan-out too large to reach, MaxDeltaChain k-1). A
// shorter chain reads faster and stores more.
func BenchmarkPGDeltaChain(b *testing.B) {
	type policy struct {
		name          string
		fanOut, chain int
	}
	var policies []policy
	for _, k := range []int{4, 8, 16, 32} {
		policies = append(policies, policy{fmt.Sprintf("skip-fanout=%d", k), k, 0})
	}
	for _, k := range []int{8, 16, 32, 64, 256} {
		policies = append(policies, policy{fmt.Sprintf("snapshot-every=%d", k), 1 << 30, k - 1})
	}
	for _, p := range policies {
		b.Run(p.name, func(b *testing.B) {
			pool := pgtest.Schema(b, nil)
			s, cfgs, report := historyStorage(b, pool, pgsaver.WithDeltaFanOut(pgsaver.Options{MaxDeltaChain: p.chain}, p.fanOut))
			benchGetStateAt(b, pool, s, cfgs)
			report()
		})
	}
}

// BenchmarkPGHistoryPageVersions is BenchmarkPGHistoryPage with each
// body's version maps (ListOptions.MetadataOnly without Headers): what
// the Studio's tree reads only for a page holding checkpoints saved
// without their next tasks (by an older version), to infer them. Its
// floor is the same raw index scan, interleaved.
func BenchmarkPGHistoryPageVersions(b *testing.B) {
	benchHistoryPage(b, checkpoints.ListOptions{Limit: 50, MetadataOnly: true}, func(page []*checkpoints.Tuple) bool {
		return len(page[0].Checkpoint.VersionsSeen) == 2
	})
}

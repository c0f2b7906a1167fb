package main

import "regexp"

// metric names a figure: a benchmark (a regexp on its name without the
// -GOMAXPROCS suffix) in a package (a path suffix), one of its units, and
// a divisor (BenchmarkLoop1000's allocs/op are per run: loopSupersteps).
type metric struct {
	pkg   string
	bench *regexp.Regexp
	unit  string
	per   float64
}

// row is one line of the table: a figure of one of issue #20's targets,
// compared with limit either directly or, when floor is set, as a ratio
// to the floor's median measured in the same `go test` run.
type row struct {
	target  string // the target number
	what    string
	fig     metric
	floor   *metric
	noFloor string // why there is no floor (when a target needs one that is not benchmarked yet)
	atLeast bool   // the figure must be ≥ limit; otherwise ≤ limit
	limit   float64
	spread  bool // compare max/min over the runs instead of the median
	ns      bool // the figure (and floor) are nanoseconds
	unit    string
	none    string // no benchmark yet: what is missing
	report  bool   // a figure to keep and report, with no limit
}

func m(pkg, bench, unit string) metric {
	return metric{pkg: pkg, bench: regexp.MustCompile(bench), unit: unit, per: 1}
}

func per(mt metric, n float64) metric { mt.per = n; return mt }

const (
	pgsaver  = "checkpoints/pgsaver"
	engine   = "engine"
	pgstore  = "store/pgstore"
	handlers = "handlers"
	runsPkg  = "runs"
)

// loopSupersteps is a run of the engine's Loop1000 benchmarks: 1002
// supersteps (the engine benchmarks' own loopSupersteps).
const loopSupersteps = 1002

// The floor of the Postgres superstep: one durable INSERT+COMMIT.
var insertCommit = m(pgsaver, `^BenchmarkPGFloorInsertCommit$`, "ns/commit")

// targets are issue #20's targets in its order. A benchmark added for a
// target replaces its "none" row here.
var targets = []row{
	{target: "1", what: "superstep on Postgres, sync", fig: m(pgsaver, `^BenchmarkPGSuperstepSync/putstep$`, "ns/superstep"),
		floor: &insertCommit, limit: 1.1, ns: true},
	{target: "1", what: "the same, floor interleaved in the benchmark", fig: m(pgsaver, `^BenchmarkPGSuperstepSync/putstep$`, "ns/superstep"),
		floor: ptr(m(pgsaver, `^BenchmarkPGSuperstepSync/putstep$`, "ns/floor")), limit: 1.1, ns: true},
	// The benchmark runs pgbench (64 clients, the step's three rows in one
	// statement) after the threads, against the same database.
	{target: "2", what: "supersteps/s, 64 threads, async, vs pgbench 64 clients", fig: m(pgsaver, `^BenchmarkPGThroughput64/async$`, "supersteps/s"),
		floor: ptr(m(pgsaver, `^BenchmarkPGThroughput64/async$`, "pgbench-tps")), atLeast: true, limit: 0.8, unit: "steps/s"},
	// The Get benchmark reads the checkpoint row by its primary key after
	// every Get, so both meet the same load.
	{target: "3", what: "state at an old checkpoint (1,000-checkpoint thread)", fig: m(pgsaver, `^BenchmarkPGGetStateAt$`, "ns/get"),
		floor: ptr(m(pgsaver, `^BenchmarkPGGetStateAt$`, "ns/floor")), limit: 2, ns: true},
	// Storage over what the values appended, not over the values handed
	// to Put: a list grown every step hands Put quadratic bytes, against
	// which even storing every value whole would pass.
	{target: "3", what: "storage vs bytes written (the list's blobs over what its steps appended)", fig: m(pgsaver, `^BenchmarkPGHistoryStorage$`, "blob-x-appended"), limit: 3},
	// The whole thread's rows over the same bytes: a checkpoint's body
	// and metadata (about 400 bytes) dwarf the one short message each step
	// of this thread appends.
	{target: "3", what: "the thread's rows (checkpoints and blobs) over what its steps appended", fig: m(pgsaver, `^BenchmarkPGHistoryStorage$`, "rows-x-appended"), report: true},
	// The page benchmarks run the floor scan (the same rows, order and
	// columns, read raw) after every page, so both meet the same load.
	// The page is read as the Studio's tree and a metadata-only history read
	// it: headers, next tasks included.
	{target: "4", what: "history page, newest 50 of 1,000, metadata only", fig: m(pgsaver, `^BenchmarkPGHistoryPage$`, "ms/page"),
		floor: ptr(m(pgsaver, `^BenchmarkPGHistoryPage$`, "ms/floor")), limit: 1.2, unit: "ms"},
	// With each body's version maps: what the tree reads only for a page
	// of checkpoints saved without their next tasks.
	{target: "4", what: "the same with version maps (older checkpoints, saved without next tasks)", fig: m(pgsaver, `^BenchmarkPGHistoryPageVersions$`, "ms/page"),
		floor: ptr(m(pgsaver, `^BenchmarkPGHistoryPageVersions$`, "ms/floor")), report: true, unit: "ms"},
	{target: "5", what: "store batched put, HNSW maintained (vectors precomputed)", fig: m(pgstore, `^BenchmarkStorePutBatch$`, "items/s"),
		atLeast: true, limit: 3000, unit: "items/s"},
	{target: "5", what: "store search p50, one namespace + filter", fig: m(pgstore, `^BenchmarkStoreSearch100k/prefix\+filter$`, "p50-ms"),
		limit: 3, unit: "ms"},
	{target: "5", what: "store search recall@10, one namespace + filter", fig: m(pgstore, `^BenchmarkStoreSearch100k/prefix\+filter$`, "recall@10"),
		atLeast: true, limit: 0.95},
	// recall@10 counts near-twins (the same words in another order,
	// whose vectors differ by float32 rounding) ranked past the tenth as
	// misses; recall@10-ties does not (see BenchmarkStoreSearch100k). The
	// store ranks by the benchmark's own score (store.CosineSimilarity),
	// so what recall@10 still misses among them are exact ties, which the
	// store breaks by namespace, then key, and the benchmark by key alone.
	{target: "5", what: "store search recall@10 with ties, one namespace + filter", fig: m(pgstore, `^BenchmarkStoreSearch100k/prefix\+filter$`, "recall@10-ties"),
		report: true},
	{target: "5", what: "store search p50, whole store", fig: m(pgstore, `^BenchmarkStoreSearch100k/filter-only$`, "p50-ms"),
		limit: 3, unit: "ms"},
	{target: "5", what: "store search recall@10, whole store", fig: m(pgstore, `^BenchmarkStoreSearch100k/filter-only$`, "recall@10"),
		atLeast: true, limit: 0.95},
	{target: "5", what: "store search recall@10 with ties, whole store", fig: m(pgstore, `^BenchmarkStoreSearch100k/filter-only$`, "recall@10-ties"),
		report: true},
	{target: "6", what: "in-memory superstep, the node writing through engine.Writes", fig: m(engine, `^BenchmarkLoop1000$`, "ns/superstep"), limit: 250, ns: true},
	{target: "6", what: "in-memory superstep, the node writing through engine.Writes, allocations", fig: per(m(engine, `^BenchmarkLoop1000$`, "allocs/op"), loopSupersteps),
		limit: 1, unit: "allocs/superstep"},
	{target: "6", what: "in-memory superstep, the engine's allocations (the node's own taken out)",
		fig: m(engine, `^BenchmarkLoop1000$`, "engine-allocs/superstep"), report: true, unit: "allocs/superstep"},
	// The node as the issue first measured it, returning engine.Set,
	// reported beside the target's rows: its update is boxed into an
	// Output by the node itself, one allocation a superstep no engine can
	// take back, so the target is the engine's superstep with the node
	// writing through the API made for hot nodes (engine.Writes). The
	// time row goes with it: the engine does the same work in both forms
	// (the same engine allocations, below), and what the Set form adds,
	// 25-35 ns in quiet runs (more on a loaded host), is that allocation
	// and its share of garbage collection. The table keeps all three rows
	// so that it shows what the Writes API changes.
	{target: "6", what: "in-memory superstep, the node returning engine.Set", fig: m(engine, `^BenchmarkLoop1000Set$`, "ns/superstep"), report: true, ns: true},
	{target: "6", what: "in-memory superstep, the node returning engine.Set, allocations", fig: per(m(engine, `^BenchmarkLoop1000Set$`, "allocs/op"), loopSupersteps),
		report: true, unit: "allocs/superstep"},
	{target: "6", what: "in-memory superstep, the node returning engine.Set, the engine's allocations",
		fig: m(engine, `^BenchmarkLoop1000Set$`, "engine-allocs/superstep"), report: true, unit: "allocs/superstep"},
	{target: "6", what: "checkpointed superstep", fig: m(engine, `^BenchmarkLoop1000Checkpointed$`, "ns/superstep"), limit: 2000, ns: true},
	{target: "6", what: "checkpointed superstep, bytes", fig: per(m(engine, `^BenchmarkLoop1000Checkpointed$`, "B/op"), loopSupersteps),
		limit: 1024, unit: "B/superstep"},
	{target: "6", what: "checkpointed superstep, max/min over runs", fig: m(engine, `^BenchmarkLoop1000Checkpointed$`, "ns/superstep"),
		spread: true, limit: 1.5, ns: true},
	// What the spread is made of: the collections of each run and their
	// CPU, and the pages it touched first (the first run in a process
	// grows the heap from nothing; a first touch costs 2-4.5 µs here).
	{target: "6", what: "checkpointed superstep, GC cycles a run, min–max over runs", fig: m(engine, `^BenchmarkLoop1000Checkpointed$`, "gc-cycles"),
		spread: true, report: true, unit: "cycles"},
	{target: "6", what: "checkpointed superstep, GC CPU a superstep, min–max over runs", fig: m(engine, `^BenchmarkLoop1000Checkpointed$`, "gc-cpu-ns/superstep"),
		spread: true, report: true, ns: true},
	{target: "6", what: "checkpointed superstep, page faults a superstep, min–max over runs", fig: m(engine, `^BenchmarkLoop1000Checkpointed$`, "faults/superstep"),
		spread: true, report: true, unit: "faults"},
	{target: "6", what: "FanOut100", fig: m(engine, `^BenchmarkFanOut100$`, "ns/op"), limit: 40e3, ns: true},
	{target: "6", what: "Send100", fig: m(engine, `^BenchmarkSend100$`, "ns/op"), limit: 40e3, ns: true},
	{target: "6", what: "Chain10", fig: m(engine, `^BenchmarkChain10$`, "ns/op"), limit: 8e3, ns: true},
	{target: "7", what: "Studio event p99, 100 tabs on one thread", fig: m(handlers, `^BenchmarkEventLatency100Tabs$`, "p99-ms"),
		limit: 50, unit: "ms"},
	{target: "7", what: "memory per idle thread", fig: m(runsPkg, `^BenchmarkIdleThreadMemory$`, "B/thread"), report: true, unit: "B/thread"},
}

func ptr[T any](v T) *T { return &v }

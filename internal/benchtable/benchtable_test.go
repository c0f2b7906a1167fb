package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"
)

// testdata/durable.txt is `make bench`-style output from this repository's
// benchmarks on the durable cluster (count 3, benchtime 200ms, a loaded
// 2-core machine); testdata/fast.txt is two of them on the fast test
// cluster (fsync off).

func load(t *testing.T, file string) *results {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func parseString(t *testing.T, s string) *results {
	t.Helper()
	res, err := parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestParse(t *testing.T) {
	t.Parallel()
	res := load(t, "durable.txt")
	var names []string
	for _, b := range res.benches {
		names = append(names, b.name)
		if len(b.runs) != 3 {
			t.Errorf("%s: %d runs, want 3", b.name, len(b.runs))
		}
	}
	want := "BenchmarkPGFloorInsertCommit BenchmarkPGSuperstepSync/putstep BenchmarkPGSuperstepSync/separate BenchmarkPGHistoryPage BenchmarkPGGetStateAt " +
		"BenchmarkLoop1000 BenchmarkLoop1000Checkpointed BenchmarkFanOut100 BenchmarkSend100 BenchmarkChain10 BenchmarkStorePutBatch"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("benchmarks\n got %s\nwant %s", got, want)
	}
	step := res.benches[1]
	if step.pkg != "github.com/superstep-dev/superstep/checkpoints/pgsaver" {
		t.Errorf("package %q", step.pkg)
	}
	if r := step.runs[2]; r["ns/superstep"] != 592356 || r["ns/floor"] != 482363 || r["x-floor"] != 1.228 || r["allocs/op"] != 15894 {
		t.Errorf("third putstep run %v", r)
	}
	durable := "Postgres: fsync=on synchronous_commit=on: durable"
	for _, b := range res.benches {
		pg := strings.Contains(b.name, "PG") || strings.Contains(b.name, "Store")
		switch {
		case pg && (len(b.durability) != 1 || b.durability[0] != durable):
			t.Errorf("%s: durability %q, want %q once", b.name, b.durability, durable)
		case !pg && b.durability != nil:
			t.Errorf("%s opens no Postgres but has durability %q", b.name, b.durability)
		}
	}
}

func TestParseResultLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"BenchmarkChain10-2                	   21175	     12084 ns/op	        12.08 µs/run	    6089 B/op	      83 allocs/op", true},
		{"BenchmarkChain10-2", false},                   // a name alone, as -v prints before logs
		{"BenchmarkChain10-2 \t 21175 \t 12084", false}, // a value without its unit
		{"BenchmarkChain10-2 \t many \t 12084 ns/op", false},
		{"BenchmarkChain10-2 \t 10 \t fast ns/op", false},
	} {
		if _, _, ok := parseResult(tc.line); ok != tc.ok {
			t.Errorf("parseResult(%q) ok = %v, want %v", tc.line, ok, tc.ok)
		}
	}
}

func TestMedianAndSpread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vs             []float64
		median, spread float64
	}{
		{nil, 0, 0},
		{[]float64{7}, 7, 1},
		{[]float64{4004, 3283, 4933}, 4004, 4933.0 / 3283},
		{[]float64{4, 1, 3, 2}, 2.5, 4},
	} {
		if got := median(tc.vs); got != tc.median {
			t.Errorf("median(%v) = %v, want %v", tc.vs, got, tc.median)
		}
		if got := spread(tc.vs); math.Abs(got-tc.spread) > 1e-12 {
			t.Errorf("spread(%v) = %v, want %v", tc.vs, got, tc.spread)
		}
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("median sorted its argument: %v", in)
	}
}

// rowFor finds the row of targets whose description is what.
func rowFor(t *testing.T, what string) row {
	t.Helper()
	for _, r := range targets {
		if r.what == what {
			return r
		}
	}
	t.Fatalf("no target row %q", what)
	return row{}
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	res := load(t, "durable.txt")
	for _, tc := range []struct {
		what string
		want cell
	}{
		// Medians: 706212 ns/superstep over 2252812 ns/op (the floor
		// benchmark, run just before on a loaded machine).
		{"superstep on Postgres, sync", cell{bench: "`BenchmarkPGSuperstepSync/putstep`", figure: "706 µs (3 runs)",
			floor: "2.25 ms `BenchmarkPGFloorInsertCommit` (3 runs)", ratio: "0.313×", limit: "≤ 1.1×", status: "met"}},
		// The median of the runs' own ratios (2.946, 1.171 and 1.228),
		// not 706212 over 603108, the medians of different runs.
		{"the same, floor interleaved in the benchmark", cell{bench: "`BenchmarkPGSuperstepSync/putstep`", figure: "706 µs (3 runs)",
			floor: "603 µs `ns/floor` (3 runs)", ratio: "1.228× (median of runs)", limit: "≤ 1.1×", status: "not met"}},
		// The captured run predates the Get benchmark's ns/get and
		// interleaved floor.
		{"state at an old checkpoint (1,000-checkpoint thread)", cell{bench: "`BenchmarkPGGetStateAt`", figure: "—",
			floor: "—", ratio: "—", limit: "≤ 2×", status: "not in this output"}},
		// The captured run predates the page benchmark's floor metric.
		{"history page, newest 50 of 1,000, metadata only", cell{bench: "`BenchmarkPGHistoryPage`", figure: "0.717 ms (3 runs)",
			floor: "not in this output", ratio: "—", limit: "≤ 1.2×", status: "no floor"}},
		{"store batched put, HNSW maintained (vectors precomputed)", cell{bench: "`BenchmarkStorePutBatch`", figure: "2095 items/s (3 runs)",
			floor: "—", ratio: "—", limit: "≥ 3000 items/s", status: "not met"}},
		{"store search recall@10, whole store", cell{bench: "`BenchmarkStoreSearch100k/filter-only`", figure: "—",
			floor: "—", ratio: "—", limit: "≥ 0.95", status: "not in this output"}},
		// 2764 allocs/op over 1002 supersteps.
		{"in-memory superstep, the node writing through engine.Writes, allocations", cell{bench: "`BenchmarkLoop1000`", figure: "2.76 allocs/superstep (3 runs)",
			floor: "—", ratio: "—", limit: "≤ 1 allocs/superstep", status: "not met"}},
		// 1841824 B/op over 1002 supersteps.
		{"checkpointed superstep, bytes", cell{bench: "`BenchmarkLoop1000Checkpointed`", figure: "1838 B/superstep (3 runs)",
			floor: "—", ratio: "—", limit: "≤ 1024 B/superstep", status: "not met"}},
		// 4933/3283 = 1.5026: just over, and printed so.
		{"checkpointed superstep, max/min over runs", cell{bench: "`BenchmarkLoop1000Checkpointed`", figure: "3.28 µs–4.93 µs (3 runs)",
			floor: "—", ratio: "1.503×", limit: "≤ 1.5×", status: "not met"}},
		{"Chain10", cell{bench: "`BenchmarkChain10`", figure: "12.0 µs (3 runs)", floor: "—", ratio: "—", limit: "≤ 8 µs", status: "not met"}},
		{"supersteps/s, 64 threads, async, vs pgbench 64 clients", cell{bench: "`BenchmarkPGThroughput64/async`", figure: "—", floor: "—", ratio: "—",
			limit: "≥ 0.8×", status: "not in this output"}},
	} {
		r := rowFor(t, tc.what)
		got := evaluate(res, r)
		got.runs = 0
		tc.want.target, tc.want.what = r.target, r.what
		if got != tc.want {
			t.Errorf("%s\n got %+v\nwant %+v", tc.what, got, tc.want)
		}
	}
}

func TestEvaluateMet(t *testing.T) {
	t.Parallel()
	// The in-memory runs of durable.txt, 3× faster: under every limit
	// but the spread's, which speed does not change.
	var b strings.Builder
	b.WriteString("pkg: github.com/superstep-dev/superstep/engine\n")
	b.WriteString("BenchmarkLoop1000-2 \t 1000 \t 160000 ns/op \t 160 ns/superstep \t 900 allocs/op\n")
	b.WriteString("BenchmarkLoop1000Checkpointed-2 \t 100 \t 1300000 ns/op \t 1300 ns/superstep \t 1000000 B/op\n")
	res := parseString(t, b.String())
	for what, want := range map[string]string{
		"in-memory superstep, the node writing through engine.Writes":              "met",
		"in-memory superstep, the node writing through engine.Writes, allocations": "met",
		"checkpointed superstep":                    "met",
		"checkpointed superstep, bytes":             "met",
		"checkpointed superstep, max/min over runs": "met",
	} {
		if got := evaluate(res, rowFor(t, what)).status; got != want {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
}

func TestEvaluateNotDurable(t *testing.T) {
	t.Parallel()
	res := load(t, "fast.txt")
	got := evaluate(res, rowFor(t, "superstep on Postgres, sync"))
	// 193705 ns/superstep over 1183337 ns/op would be met, but the cluster
	// had fsync off.
	if got.ratio != "0.164×" || got.status != "Postgres not durable, not comparable (met)" {
		t.Errorf("got %+v", got)
	}
	var out bytes.Buffer
	render(&out, res, targets)
	if !strings.Contains(out.String(), "Postgres: fsync=off synchronous_commit=off: NOT durable, a test cluster; use make bench (2 benchmarks: BenchmarkPGFloorInsertCommit, BenchmarkPGSuperstepSync/putstep)") {
		t.Errorf("the durability line is missing:\n%s", out.String())
	}
}

func TestHistoryPageFloor(t *testing.T) {
	t.Parallel()
	// The page benchmark reports the page and its floor, measured in the
	// same iterations (output of this machine, durable cluster): the
	// figure is the page's ms/page, the floor its ms/floor, never ns/op
	// (which counts both).
	res := parseString(t, `pkg: github.com/superstep-dev/superstep/checkpoints/pgsaver
BenchmarkPGHistoryPage-2        	     100	    787781 ns/op	         0.1833 ms/floor	         0.6042 ms/page	         3.296 x-floor	  245270 B/op	    4370 allocs/op
BenchmarkPGHistoryPage-2        	     100	    803750 ns/op	         0.1981 ms/floor	         0.6055 ms/page	         3.057 x-floor	  245270 B/op	    4370 allocs/op
BenchmarkPGHistoryPage-2        	     100	    762363 ns/op	         0.1610 ms/floor	         0.6012 ms/page	         3.734 x-floor	  245270 B/op	    4370 allocs/op
`)
	got := evaluate(res, rowFor(t, "history page, newest 50 of 1,000, metadata only"))
	if got.bench != "`BenchmarkPGHistoryPage`" || !strings.HasPrefix(got.figure, "0.604 ms") || !strings.HasPrefix(got.floor, "0.183 ms") || got.ratio != "3.296× (median of runs)" || got.status != "not met" {
		t.Errorf("got %+v", got)
	}
}

// TestFloorInOtherRuns: a floor of the figure's own benchmark that no run
// reports together with the figure gives no ratio, not a ratio of 0.
func TestFloorInOtherRuns(t *testing.T) {
	t.Parallel()
	res := parseString(t, `pkg: github.com/superstep-dev/superstep/checkpoints/pgsaver
BenchmarkPGHistoryPage-2        	     100	    787781 ns/op	         0.6042 ms/page
BenchmarkPGHistoryPage-2        	     100	    803750 ns/op	         0.1981 ms/floor
`)
	got := evaluate(res, rowFor(t, "history page, newest 50 of 1,000, metadata only"))
	if got.status != "no floor" || got.ratio != "—" {
		t.Errorf("got %+v; want no floor and no ratio", got)
	}
}

func TestEvaluateFailed(t *testing.T) {
	t.Parallel()
	res := parseString(t, `pkg: github.com/superstep-dev/superstep/engine
--- FAIL: BenchmarkChain10-2
    bench_test.go:172: [] context canceled
FAIL
`)
	if got := evaluate(res, rowFor(t, "Chain10")).status; got != "failed" {
		t.Errorf("status %q, want failed", got)
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	render(&out, load(t, "durable.txt"), targets)
	s := out.String()
	lines := strings.Split(s, "\n")
	if !strings.HasPrefix(lines[0], "| # | target | benchmark | figure | floor | ratio | target | status |") {
		t.Errorf("header %q", lines[0])
	}
	rows := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| #") {
			rows++
			if n := strings.Count(l, " | "); n != 7 {
				t.Errorf("row with %d separators: %s", n, l)
			}
		}
	}
	if rows != len(targets) {
		t.Errorf("%d rows, want one per target row (%d)", rows, len(targets))
	}
	for _, want := range []string{
		"| 1 | superstep on Postgres, sync | `BenchmarkPGSuperstepSync/putstep` | 706 µs (3 runs) |",
		"Some figures are medians of fewer than 5 runs",
		"Postgres: fsync=on synchronous_commit=on: durable (6 benchmarks: BenchmarkPGFloorInsertCommit, ",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestEvaluateTarget7: the 100-tab latency meets or misses its 50 ms;
// the idle thread's memory is reported, with no limit to meet.
func TestEvaluateTarget7(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("pkg: github.com/superstep-dev/superstep/handlers\n")
	b.WriteString("BenchmarkEventLatency100Tabs-2 \t 21 \t 53015501 ns/op \t 27.19 p50-ms \t 55.23 p99-ms\n")
	b.WriteString("pkg: github.com/superstep-dev/superstep/runs\n")
	b.WriteString("BenchmarkIdleThreadMemory-2 \t 300 \t 2344786 ns/op \t 25975 B/thread\n")
	res := parseString(t, b.String())
	lat := evaluate(res, rowFor(t, "Studio event p99, 100 tabs on one thread"))
	if lat.status != "not met" || !strings.HasPrefix(lat.figure, "55.2 ms") || lat.limit != "≤ 50 ms" {
		t.Errorf("100 tabs: %+v, want 55.2 ms, not met against ≤ 50 ms", lat)
	}
	mem := evaluate(res, rowFor(t, "memory per idle thread"))
	if mem.status != "reported" || !strings.HasPrefix(mem.figure, "25975 B/thread") || mem.limit != "—" {
		t.Errorf("idle thread memory: %+v, want 25975 B/thread, reported", mem)
	}
}

// TestEvaluateTarget3Storage: a thread that stores every value of its
// growing list whole (delta storage off: 0.101 of the bytes handed to Put,
// 476 times what its steps appended) misses target 3's storage limit; skip
// deltas (2.51 times) meet it.
func TestEvaluateTarget3Storage(t *testing.T) {
	t.Parallel()
	row := rowFor(t, "storage vs bytes written (the list's blobs over what its steps appended)")
	for _, tc := range []struct {
		line, status string
	}{
		{"BenchmarkPGHistoryStorage-2 \t 1 \t 100 ns/op \t 0.101 x-raw \t 476 blob-x-appended\n", "not met"},
		{"BenchmarkPGHistoryStorage-2 \t 1 \t 100 ns/op \t 0.029 x-raw \t 2.51 blob-x-appended\n", "met"},
	} {
		res := parseString(t, "pkg: github.com/superstep-dev/superstep/checkpoints/pgsaver\n"+tc.line)
		if c := evaluate(res, row); !strings.HasPrefix(c.status, tc.status) {
			t.Errorf("%q: %+v, want %s", tc.line, c, tc.status)
		}
	}
}

// TestSpliceTable: the README's table is replaced whole between its
// markers, the rest of the file kept byte for byte; a file without the
// markers (or with them twice, or in the wrong order) is an error.
func TestSpliceTable(t *testing.T) {
	t.Parallel()
	doc := "# Title\n\nbefore\n" + readmeBegin + "\n| old | table |\n|---|---|\n\nold notes\n" + readmeEnd + "\nafter\n"
	got, err := spliceTable([]byte(doc), []byte("| new |\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nbefore\n" + readmeBegin + "\n| new |\n" + readmeEnd + "\nafter\n"
	if string(got) != want {
		t.Errorf("spliced:\n%s\nwant:\n%s", got, want)
	}
	for name, bad := range map[string]string{
		"no markers": "# Title\n",
		"no end":     readmeBegin + "\n| old |\n",
		"reversed":   readmeEnd + "\n" + readmeBegin + "\n",
		"twice":      readmeBegin + "\n" + readmeEnd + "\n" + readmeBegin + "\n" + readmeEnd + "\n",
	} {
		if _, err := spliceTable([]byte(bad), []byte("| new |\n")); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestWriteReadme writes a rendered table into a file between its
// markers, and leaves a file without markers as it was.
func TestWriteReadme(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/README.md"
	if err := os.WriteFile(path, []byte("intro\n"+readmeBegin+"\nstale\n"+readmeEnd+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	render(&table, load(t, "durable.txt"), targets)
	if err := writeReadme(path, table.Bytes()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !strings.Contains(string(got), "| 1 | superstep on Postgres, sync | `BenchmarkPGSuperstepSync/putstep` |") || strings.Contains(string(got), "stale") {
		t.Errorf("README after writing:\n%s", got)
	}
	plain := dir + "/plain.md"
	os.WriteFile(plain, []byte("no markers\n"), 0o644)
	if err := writeReadme(plain, table.Bytes()); err == nil {
		t.Error("a file without markers: no error")
	}
	if b, _ := os.ReadFile(plain); string(b) != "no markers\n" {
		t.Errorf("a file without markers was changed: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

package main

import (
	"bufio"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// run is one result line of `go test -bench`: its metrics by unit
// ("ns/op", "B/op", "ns/superstep", ...).
type run map[string]float64

// bench is every run of one benchmark in one package, in input order.
type bench struct {
	pkg, name  string // name without the -GOMAXPROCS suffix
	runs       []run
	durability []string // what pgtest logged about its Postgres, once per distinct line
	failed     bool
}

// results is a parsed `go test -bench` output.
type results struct {
	benches []*bench // in order of first appearance
}

var (
	procsSuffix = regexp.MustCompile(`-\d+$`)
	// pgtest logs one of these in every benchmark that opens Postgres.
	durabilityLog = regexp.MustCompile(`Postgres(: fsync=\S+ synchronous_commit=\S+: .*| durability unknown: .*)$`)
)

// parse reads `go test -bench` output. Lines it does not know (test
// chatter, build errors, PASS/ok) are skipped, so the raw output of a
// whole `make bench` can be piped in as it is.
func parse(r io.Reader) (*results, error) {
	res := &results{}
	byKey := map[[2]string]*bench{}
	get := func(pkg, name string) *bench {
		k := [2]string{pkg, procsSuffix.ReplaceAllString(name, "")}
		b := byKey[k]
		if b == nil {
			b = &bench{pkg: k[0], name: k[1]}
			byKey[k] = b
			res.benches = append(res.benches, b)
		}
		return b
	}
	var pkg string
	var logging *bench // the benchmark whose "--- BENCH:" log lines follow
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg, logging = strings.TrimSpace(strings.TrimPrefix(line, "pkg: ")), nil
		case strings.HasPrefix(line, "--- BENCH: "):
			logging = get(pkg, strings.TrimSpace(strings.TrimPrefix(line, "--- BENCH: ")))
		case strings.HasPrefix(line, "--- FAIL: Benchmark"):
			logging = get(pkg, strings.Fields(strings.TrimPrefix(line, "--- FAIL: "))[0])
			logging.failed = true
		case strings.HasPrefix(line, "    ") && logging != nil:
			if m := durabilityLog.FindStringSubmatch(line); m != nil {
				d := "Postgres" + m[1]
				if !slices.Contains(logging.durability, d) {
					logging.durability = append(logging.durability, d)
				}
			}
		case strings.HasPrefix(line, "Benchmark"):
			logging = nil
			name, r, ok := parseResult(line)
			if ok {
				b := get(pkg, name)
				b.runs = append(b.runs, r)
			}
		default:
			logging = nil
		}
	}
	return res, sc.Err()
}

// parseResult reads "BenchmarkX-2  1000  1234 ns/op  16 B/op ...": a
// name, an iteration count, then value-unit pairs. A line that is not a
// result (a benchmark's name printed before a log, say) gives ok false.
func parseResult(line string) (name string, r run, ok bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 {
		return "", nil, false
	}
	if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
		return "", nil, false
	}
	r = run{}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return "", nil, false
		}
		r[f[i+1]] = v
	}
	return f[0], r, true
}

// find returns the first benchmark in a package ending in pkg whose name
// matches re, or nil.
func (res *results) find(pkg string, re *regexp.Regexp) *bench {
	for _, b := range res.benches {
		if (b.pkg == pkg || strings.HasSuffix(b.pkg, "/"+pkg)) && re.MatchString(b.name) {
			return b
		}
	}
	return nil
}

// values is the metric unit of each run that reported it, divided by per.
func (b *bench) values(unit string, per float64) []float64 {
	var vs []float64
	for _, r := range b.runs {
		if v, ok := r[unit]; ok {
			vs = append(vs, v/per)
		}
	}
	return vs
}

// ratios is, for each run that reported both, fig's value over
// floor's: a figure over a floor measured in the same run.
func (b *bench) ratios(fig, floor metric) []float64 {
	var vs []float64
	for _, r := range b.runs {
		f, ok1 := r[fig.unit]
		l, ok2 := r[floor.unit]
		if ok1 && ok2 && l != 0 {
			vs = append(vs, (f/fig.per)/(l/floor.per))
		}
	}
	return vs
}

// median of vs (the mean of the middle two for an even count); 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spread is max/min of vs: how far apart the runs are (1 when they agree).
func spread(vs []float64) float64 {
	if len(vs) == 0 || slices.Min(vs) <= 0 {
		return 0
	}
	return slices.Max(vs) / slices.Min(vs)
}

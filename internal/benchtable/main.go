// Command benchtable reads `go test -bench` output on stdin and prints
// issue #20's targets as one Markdown table: each figure (the median over
// the -count runs), the floor it is compared with (its median, measured in
// the same run), their ratio, the target and whether it is met, then what
// pgtest logged about the Postgres the benchmarks ran on. `make bench`
// pipes its output through it.
//
// With -readme FILE it also writes the table into FILE between the lines
// readmeBegin and readmeEnd (`make bench/readme` does it for README.md),
// so the README's table is the one `make bench` printed, never retyped.
//
// It uses the standard library only: the medians and ratios it needs are a
// few lines, and benchstat's statistics are not what the issue asks for.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

func main() {
	readme := flag.String("readme", "", "also write the table into this file, between its benchtable markers")
	flag.Parse()
	res, err := parse(os.Stdin)
	if err == nil {
		var table bytes.Buffer
		render(&table, res, targets)
		os.Stdout.Write(table.Bytes())
		if *readme != "" {
			err = writeReadme(*readme, table.Bytes())
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// The lines of a README between which -readme writes the table.
const (
	readmeBegin = "<!-- benchtable: begin (make bench/readme writes this table) -->"
	readmeEnd   = "<!-- benchtable: end -->"
)

// spliceTable returns doc with the lines between readmeBegin and
// readmeEnd replaced by table.
func spliceTable(doc, table []byte) ([]byte, error) {
	begin := bytes.Index(doc, []byte(readmeBegin+"\n"))
	end := bytes.Index(doc, []byte(readmeEnd))
	switch {
	case begin < 0 || end < 0:
		return nil, fmt.Errorf("the file has no lines %q and %q to write the table between", readmeBegin, readmeEnd)
	case end < begin:
		return nil, errors.New("the table's end marker comes before its begin marker")
	case bytes.Count(doc, []byte(readmeBegin)) > 1 || bytes.Count(doc, []byte(readmeEnd)) > 1:
		return nil, errors.New("the file has more than one table marker of a kind")
	}
	begin += len(readmeBegin) + 1
	out := slices.Concat(doc[:begin], table, doc[end:])
	return out, nil
}

// writeReadme splices table into the file at path, replacing the file
// whole (a new file renamed over it), so a failure leaves it as it was.
func writeReadme(path string, table []byte) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := spliceTable(doc, table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".benchtable-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if st, err := os.Stat(path); err == nil {
		os.Chmod(tmp.Name(), st.Mode().Perm())
	}
	return os.Rename(tmp.Name(), path)
}

// cell is one row as printed.
type cell struct {
	target, what, bench, figure, floor, ratio, limit, status string
	runs                                                     int // the fewest runs behind the figure or its floor
}

// minRuns is the fewest runs a median may come from (issue #20).
const minRuns = 5

// render writes the table for rows and the durability of every Postgres
// benchmark in res.
func render(w io.Writer, res *results, rows []row) {
	fmt.Fprintln(w, "| # | target | benchmark | figure | floor | ratio | target | status |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	few := false
	for _, r := range rows {
		c := evaluate(res, r)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
			c.target, c.what, c.bench, c.figure, c.floor, c.ratio, c.limit, c.status)
		if c.runs > 0 && c.runs < minRuns {
			few = true
		}
	}
	if few {
		fmt.Fprintf(w, "\nSome figures are medians of fewer than %d runs, the fewest issue #20 accepts: run with COUNT=%d or more.\n", minRuns, minRuns)
	}
	durability(w, res)
}

// evaluate computes one row: medians of the figure and its floor over the
// runs in res, their ratio (for a floor measured in the figure's own
// benchmark, the median of each run's ratio), and met or not met against
// the row's limit.
func evaluate(res *results, r row) cell {
	c := cell{target: r.target, what: r.what, figure: "—", floor: "—", ratio: "—", limit: limitText(r)}
	if r.none != "" {
		c.bench, c.status = "—", r.none
		return c
	}
	fb := res.find(r.fig.pkg, r.fig.bench)
	c.bench = "`" + strings.TrimPrefix(r.fig.bench.String(), "^") + "`"
	if fb == nil || len(fb.values(r.fig.unit, r.fig.per)) == 0 {
		c.bench = strings.ReplaceAll(strings.TrimSuffix(c.bench, "$`")+"`", `\`, "")
		c.status = "not in this output"
		if fb != nil && fb.failed {
			c.status = "failed"
		}
		return c
	}
	c.bench = "`" + fb.name + "`"
	vs := fb.values(r.fig.unit, r.fig.per)
	fig := median(vs)
	c.figure = value(fig, r) + runsText(len(vs))
	c.runs = len(vs)
	have := fig
	durable := fb.durability
	switch {
	case r.spread:
		have = spread(vs)
		c.figure = fmt.Sprintf("%s–%s", value(slices.Min(vs), r), value(slices.Max(vs), r)) + runsText(len(vs))
		c.ratio = ratioText(have)
	case r.floor != nil:
		lb := res.find(r.floor.pkg, r.floor.bench)
		var lvs []float64
		if lb != nil {
			lvs = lb.values(r.floor.unit, r.floor.per)
		}
		if len(lvs) == 0 {
			c.floor = r.noFloor
			if lb != nil || r.noFloor == "" {
				c.floor = "not in this output"
			}
			c.status = "no floor"
			return c
		}
		floor := median(lvs)
		name := lb.name
		if lb == fb {
			// A floor measured in each run of the figure's own benchmark
			// shares that run's load (most are interleaved with it): the
			// ratio is the median of the runs' own ratios, not of two
			// medians that may come from different runs.
			pairs := fb.ratios(r.fig, *r.floor)
			if len(pairs) == 0 {
				c.floor, c.ratio, c.status = "not in the same runs", "—", "no floor"
				return c
			}
			name, have = r.floor.unit, median(pairs)
			c.runs = min(len(vs), len(pairs))
			c.ratio = ratioText(have) + " (median of runs)"
		} else {
			have = fig / floor
			c.runs = min(c.runs, len(lvs))
			c.ratio = ratioText(have)
		}
		c.floor = fmt.Sprintf("%s `%s`%s", value(floor, r), name, runsText(len(lvs)))
		durable = append(slices.Clone(durable), lb.durability...)
	}
	c.status = verdict(have, r)
	if r.report {
		c.status = "reported"
	}
	for _, d := range durable {
		if !strings.HasSuffix(d, ": durable") {
			c.status = "Postgres not durable, not comparable (" + c.status + ")"
			break
		}
	}
	return c
}

func verdict(have float64, r row) string {
	if r.atLeast && have >= r.limit || !r.atLeast && have <= r.limit {
		return "met"
	}
	return "not met"
}

func limitText(r row) string {
	op := "≤ "
	if r.atLeast {
		op = "≥ "
	}
	switch {
	case r.none != "" && r.limit == 0, r.report:
		return "—"
	case r.floor != nil || r.spread || r.none != "":
		return op + trim(num(r.limit)) + "×"
	}
	n, unit, _ := strings.Cut(value(r.limit, r), " ")
	return strings.TrimSpace(op + trim(n) + " " + unit)
}

func runsText(n int) string {
	if n == 1 {
		return " (1 run)"
	}
	return fmt.Sprintf(" (%d runs)", n)
}

// ratioText keeps three decimals so that a ratio just over its limit
// never prints as the limit itself.
func ratioText(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) + "×" }

// value prints v in the row's unit: nanoseconds scaled to ns, µs or ms.
func value(v float64, r row) string {
	if !r.ns {
		if r.unit == "" || r.unit == "×" {
			return num(v)
		}
		return num(v) + " " + r.unit
	}
	switch {
	case v >= 1e6:
		return num(v/1e6) + " ms"
	case v >= 1e3:
		return num(v/1e3) + " µs"
	}
	return num(v) + " ns"
}

// num prints three significant digits, without an exponent.
func num(v float64) string {
	if v == 0 || math.Abs(v) >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// trim drops a number's trailing zeros: limits print as the issue says them.
func trim(n string) string {
	if !strings.Contains(n, ".") {
		return n
	}
	return strings.TrimSuffix(strings.TrimRight(n, "0"), ".")
}

// durability lists what pgtest logged about each benchmark's Postgres,
// grouped by line, so a table from a fast test cluster says so.
func durability(w io.Writer, res *results) {
	var lines []string
	who := map[string][]string{}
	for _, b := range res.benches {
		for _, d := range b.durability {
			if who[d] == nil {
				lines = append(lines, d)
			}
			who[d] = append(who[d], b.name)
		}
	}
	fmt.Fprintln(w)
	if len(lines) == 0 {
		fmt.Fprintln(w, "Postgres durability: no benchmark in this output logged it.")
		return
	}
	for _, d := range lines {
		fmt.Fprintf(w, "%s (%d benchmarks: %s)\n", d, len(who[d]), strings.Join(who[d], ", "))
	}
}

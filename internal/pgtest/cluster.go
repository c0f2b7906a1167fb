package pgtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Cluster is a Postgres cluster of the test's own, made by the project's
// scripts/dev-postgres in a temporary folder on a free port, that the test
// may stop and start as a database restart would: the shared test server
// is never touched. It is deleted when the test ends.
type Cluster struct {
	// URL is the cluster's database URL.
	URL  string
	env  []string
	root string
}

// NewCluster starts a cluster (about a second once PostgreSQL and pgvector
// are installed, which `make test` sees to). Like every database test it
// skips without TEST_DATABASE_URL, except under CI.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	URL(tb) // skip (or fail under CI) as other database tests do
	// Short and traversable by the postgres user the script runs the
	// server as: the socket lives inside, within 107 bytes.
	root, err := os.MkdirTemp("/tmp", "pgf")
	if err != nil {
		tb.Fatalf("pgtest: cluster folder: %v", err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		tb.Fatalf("pgtest: cluster folder: %v", err)
	}
	// A port below the ephemeral range (32768 and up on Linux), so that
	// no outgoing connection takes it between the check and the server's
	// bind; a start that still finds it taken tries another.
	c := &Cluster{root: root}
	tb.Cleanup(func() {
		// Only with the cluster's own environment: without PGROOT the
		// script would stop the project's shared cluster.
		if c.env != nil {
			_, _ = c.try("stop")
		}
		os.RemoveAll(root)
	})
	var out string
	for attempt := 0; ; attempt++ {
		port := 20000 + rand.IntN(12000)
		if ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
		} else if attempt < 20 {
			continue
		}
		c.env = append(os.Environ(), "PGROOT="+root, "PGPORT="+strconv.Itoa(port), "PGDATABASE=fault")
		var err error
		if out, err = c.try("start"); err == nil {
			break
		}
		if attempt >= 4 {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	c.URL = strings.TrimPrefix(lines[len(lines)-1], "DATABASE_URL=")
	if !strings.HasPrefix(c.URL, "postgres://") {
		tb.Fatalf("pgtest: dev-postgres printed no DATABASE_URL: %s", out)
	}
	return c
}

// Stop stops the server (pg_ctl's fast mode: sessions are terminated).
func (c *Cluster) Stop(tb testing.TB) { tb.Helper(); c.run(tb, "stop") }

// Start starts the server again.
func (c *Cluster) Start(tb testing.TB) { tb.Helper(); c.run(tb, "start") }

func (c *Cluster) run(tb testing.TB, verb string) string {
	tb.Helper()
	out, err := c.try(verb)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return out
}

// try runs dev-postgres verb, returning its standard output, or an error
// with everything it printed.
func (c *Cluster) try(verb string) (string, error) {
	cmd := exec.Command(script(), verb)
	cmd.Env = c.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("dev-postgres %s: %w\n%s%s", verb, err, out, stderr.String())
	}
	return string(out), nil
}

// script is the repository's scripts/dev-postgres.
func script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "dev-postgres")
}

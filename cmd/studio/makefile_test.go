package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeWith runs `make target` in the repository with stand-ins for the
// local Postgres (devPostgres, a shell script body) and the go command (it
// records its arguments and DATABASE_URL / TEST_DATABASE_URL in a log and
// does nothing else), and returns make's exit code, its stderr, and the
// log: what reached go.
func makeWith(t *testing.T, target, devPostgres string) (int, string, string) {
	t.Helper()
	// make runs this very test (`make test`): it is always there.
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is not installed: %v", err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "go.log")
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/usr/bin/env bash\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pg := write("dev-postgres", devPostgres)
	goStub := write("go", `echo "go $* DATABASE_URL=${DATABASE_URL-} TEST_DATABASE_URL=${TEST_DATABASE_URL-}" >> `+log+"\n")
	cmd := exec.Command("make", "--no-print-directory", target, "DEV_POSTGRES="+pg, "GO="+goStub, "DEV_BROWSER=true")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	return code, stderr.String(), string(got)
}

// When the local Postgres does not start (here: the port is taken), `make
// run` and `make test` stop with the reason and a clear error, and never
// start the Studio or the tests on in-memory backends.
func TestMakeStopsWhenItsPostgresFailsToStart(t *testing.T) {
	t.Parallel()
	failing := `echo "dev-postgres: error: the cluster did not start: could not bind IPv4 address \"127.0.0.1\": Address already in use" >&2
exit 1
`
	for _, target := range []string{"run", "test", "bench"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			code, stderr, ran := makeWith(t, target, failing)
			if code == 0 {
				t.Fatalf("make %s exited 0; stderr:\n%s", target, stderr)
			}
			for _, want := range []string{
				"Address already in use",
				"make " + target + ": error: the local Postgres did not start",
				"not continuing without the local Postgres",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, sub := range []string{"go run ", "go test "} {
				if strings.Contains(ran, sub) {
					t.Fatalf("make %s went on to %q after the database failed:\n%s", target, sub, ran)
				}
			}
		})
	}
}

// A stand-in that exits 0 but prints no URL is a failure too.
func TestMakeStopsWhenItsPostgresPrintsNoURL(t *testing.T) {
	t.Parallel()
	code, stderr, ran := makeWith(t, "run", "echo 'something odd'\n")
	if code == 0 || !strings.Contains(stderr, "printed no DATABASE_URL") || strings.Contains(ran, "go run ") {
		t.Fatalf("exit %d, stderr:\n%s\nran:\n%s", code, stderr, ran)
	}
}

// When the local Postgres starts, `make run` serves on it and `make test`
// tests against it: the URL reaches go.
func TestMakePassesItsPostgresURLOn(t *testing.T) {
	t.Parallel()
	ok := `echo "dev-postgres: starting" >&2
echo "DATABASE_URL=postgres://postgres@127.0.0.1:55432/superstep?sslmode=disable"
`
	for _, tc := range []struct{ target, want string }{
		{"run", "go run ./cmd/studio -addr 127.0.0.1:8080 DATABASE_URL=postgres://postgres@127.0.0.1:55432/superstep?sslmode=disable"},
		{"test", "TEST_DATABASE_URL=postgres://postgres@127.0.0.1:55432/superstep?sslmode=disable"},
	} {
		code, stderr, ran := makeWith(t, tc.target, ok)
		if code != 0 || !strings.Contains(ran, tc.want) {
			t.Errorf("make %s: exit %d, stderr:\n%s\ngo got:\n%s\nwant %q", tc.target, code, stderr, ran, tc.want)
		}
	}
}

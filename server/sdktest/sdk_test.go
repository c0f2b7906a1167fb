package sdktest

import (
	"bufio"
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/internal/pgtest"
)

// token is the Studio's auth token in the test: the SDK sends it as
// x-api-key (from LANGGRAPH_API_KEY), so every scenario also checks the
// API accepts the SDK's header.
const token = "sdktest-token"

// TestSDKScenarios runs every js/*.test.mjs scenario with the official JS
// SDK against the real binary, once on Postgres and once on the in-memory
// backends, each behind a Proxy that fails the test on any exchange that
// breaks a wire rule.
func TestSDKScenarios(t *testing.T) {
	t.Parallel()
	js, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(js, "node_modules", "@langchain", "langgraph-sdk", "package.json")); err != nil {
		t.Fatalf("the JS SDK is not installed in %s; from the repository root run:\n\tmake sdk/deps\n(which runs: npm ci --prefix server/sdktest/js)", js)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (Node.js 20 or later runs the SDK scenarios): %v", err)
	}
	files, err := filepath.Glob(filepath.Join(js, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s (err %v)", js, err)
	}
	bin := buildStudio(t)
	backends := []struct {
		name string
		db   func(*testing.T) string
	}{
		{"postgres", postgresURL},
		{"memory", func(*testing.T) string { return "" }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			studio := startStudio(t, bin, b.db(t))
			proxy := NewProxy(studio)
			front := httptest.NewServer(proxy)
			t.Cleanup(front.Close)
			runScenarios(t, node, js, files, front.URL, b.name)
			if proxy.Exchanges() == 0 {
				t.Fatal("the scenarios made no request through the proxy")
			}
			for _, v := range proxy.Violations() {
				t.Errorf("wire rule broken: %s", v)
			}
		})
	}
}

// buildStudio builds cmd/studio into a temporary directory, with the race
// detector when the test runs with it.
func buildStudio(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "studio")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool(), append(args, "./cmd/studio")...)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/studio: %v\n%s", err, out)
	}
	return bin
}

// goTool is the go command that runs this test, so the binary is built
// with the same toolchain.
func goTool() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// postgresURL is a URL for a fresh, empty schema of the test database
// (dropped when the test ends); the Studio migrates it when it starts.
func postgresURL(t *testing.T) string {
	pool := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatalf("%s: %v", pgtest.EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", pool.Config().ConnConfig.RuntimeParams["search_path"])
	u.RawQuery = q.Encode()
	return u.String()
}

// listening is the line the Studio logs when it serves.
var listening = regexp.MustCompile(`Superstep Studio is listening.*url=(http://[^\s"]+)`)

// startStudio starts the binary on a free port (Postgres at databaseURL,
// or in-memory backends when it is empty), with the offline model, and
// returns its URL. It stops the Studio when the test ends and shows its
// log when the test failed.
func startStudio(t *testing.T, bin, databaseURL string) *url.URL {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-database-url", databaseURL)
	cmd.Env = append(cleanEnv(), "STUDIO_AUTH_TOKEN="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuffer{}
	cmd.Stdout = log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the studio: %v", err)
	}
	found := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-copied
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil && !t.Failed() {
				t.Errorf("the studio exited with %v when stopped; its log:\n%s", err, log)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the studio did not stop within 15s of SIGINT; its log:\n%s", log)
		}
		out := log.String()
		if strings.Contains(out, "WARNING: DATA RACE") || strings.Contains(out, "panic:") {
			t.Errorf("the studio's log shows a data race or a panic:\n%s", out)
		} else if t.Failed() {
			t.Logf("the studio's log:\n%s", out)
		}
	})
	select {
	case raw := <-found:
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("the studio logged a bad URL %q: %v", raw, err)
		}
		return u
	case err := <-exited:
		t.Fatalf("the studio exited before serving: %v; its log:\n%s", err, log)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the studio did not log its URL within 2 minutes; its log:\n%s", log)
	}
	return nil
}

// cleanEnv is the test's environment without what would change the
// Studio under test: a database, a token, or a real model provider (the
// scenarios rely on the offline model's deterministic answers).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DATABASE_URL", "STUDIO_ADDR", "STUDIO_AUTH_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "SUPERSTEP_MODEL",
			"LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// nodeSummary is the spec reporter's count of tests run and failed.
var (
	nodeTests = regexp.MustCompile(`(?m)^ℹ tests (\d+)$`)
	nodeFails = regexp.MustCompile(`(?m)^ℹ fail (\d+)$`)
)

// runScenarios runs the scenario files with node's test runner against
// apiURL and fails the test, with node's output, when any fails.
func runScenarios(t *testing.T, node, dir string, files []string, apiURL, backend string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	// A scenario that hangs (a stream that never ends) fails on its own
	// after two minutes, by name, instead of stopping the whole run.
	args := []string{"--test", "--test-reporter=spec", "--test-timeout=120000"}
	cmd := exec.CommandContext(ctx, node, append(args, files...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "SUPERSTEP_URL="+apiURL, "LANGGRAPH_API_KEY="+token, "SUPERSTEP_BACKEND="+backend, "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test on %s failed: %v\n%s", backend, err, out)
	}
	m := nodeTests.FindSubmatch(out)
	if m == nil || string(m[1]) == "0" {
		t.Fatalf("node --test ran no scenario:\n%s", out)
	}
	if f := nodeFails.FindSubmatch(out); f == nil || string(f[1]) != "0" {
		t.Fatalf("node --test reports failures:\n%s", out)
	}
	t.Logf("node --test on %s:\n%s", backend, out)
}

// syncBuffer is a bytes.Buffer safe for the goroutines that copy the
// Studio's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) WriteString(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/studio"
)

func TestParseConfigFlagsMirrorEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://env", "STUDIO_ADDR": "127.0.0.1:9999"}
	cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil || cfg.DatabaseURL != "postgres://env" || cfg.Addr != "127.0.0.1:9999" {
		t.Fatalf("from env: %+v, %v", cfg, err)
	}
	cfg, err = parseConfig([]string{"-database-url", "postgres://flag", "-addr", ":1"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil || cfg.DatabaseURL != "postgres://flag" || cfg.Addr != ":1" {
		t.Fatalf("flags must win over env: %+v, %v", cfg, err)
	}
	cfg, err = parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.DatabaseURL != "" || cfg.Addr != "127.0.0.1:8080" {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
}

func TestParseConfigRejectsStrayArguments(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	if _, err := parseConfig([]string{"oops"}, func(string) string { return "" }, &stderr); err == nil {
		t.Fatal("want an error for a stray argument")
	}
	if !strings.Contains(stderr.String(), "unexpected arguments") {
		t.Fatalf("stderr %q does not say what was wrong", stderr.String())
	}
}

func TestMemoryBannerSaysHowToSwitch(t *testing.T) {
	t.Parallel()
	for _, want := range []string{"IN-MEMORY", "DATABASE_URL", "make run"} {
		if !strings.Contains(memoryBanner, want) {
			t.Errorf("banner lacks %q", want)
		}
	}
}

func TestParseConfigDBRetryWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  string
		want time.Duration
	}{
		{nil, "", 30 * time.Second},
		{nil, "2m", 2 * time.Minute},
		{[]string{"-db-retry-window", "5s"}, "2m", 5 * time.Second},
		{[]string{"-db-retry-window", "0"}, "", -1}, // no retry
	} {
		cfg, err := parseConfig(tc.args, func(k string) string {
			if k == "STUDIO_DB_RETRY_WINDOW" {
				return tc.env
			}
			return ""
		}, io.Discard)
		if err != nil || cfg.DBRetryWindow != tc.want {
			t.Errorf("%v env %q: window %v, %v; want %v", tc.args, tc.env, cfg.DBRetryWindow, err, tc.want)
		}
	}
	for _, bad := range []string{"soon", "-5s"} {
		if _, err := parseConfig([]string{"-db-retry-window", bad}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), "duration") {
			t.Errorf("window %q: err %v, want one asking for a duration", bad, err)
		}
	}
}

// Every graph the command registers, the demo included, has an example
// input for the start form and its "Try it" button.
func TestEveryRegisteredGraphHasAnInput(t *testing.T) {
	t.Parallel()
	// The model main picks with no key in the environment: the offline
	// model with the examples' responders.
	// The model main picks with no key in the environment.
	offlineOnly := func(h models.Hooks) modelenv.Config {
		c := modelConfig(h)
		c.Getenv = func(string) string { return "" }
		return c
	}
	gs, err := graphs(offlineOnly)(studio.Backends{Checkpointer: checkpoints.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	in := inputs()
	for name := range gs {
		if len(in[name]) == 0 {
			t.Errorf("graph %s has no example input", name)
		}
	}
	for name := range in {
		if gs[name] == nil {
			t.Errorf("input for %s, which is not registered", name)
		}
	}
	// The demo's input runs to its review interrupt.
	_, err = gs["demo-review"].Pregel().Invoke(context.Background(), in["demo-review"], &engine.RunOptions{ThreadID: "demo"})
	var intr *engine.Interrupted
	if !errors.As(err, &intr) {
		t.Fatalf("demo-review from its input: %v, want the review interrupt", err)
	}
	// cve-agent's tool loop runs on that model to its review.
	_, err = gs[examples.CVEAgent].Pregel().Invoke(context.Background(), in[examples.CVEAgent], &engine.RunOptions{ThreadID: "cve"})
	if !errors.As(err, &intr) || intr.Interrupts[0].Node != "review" {
		t.Fatalf("cve-agent from its input: %v, want the review interrupt", err)
	}
}

// TestParseConfigDurableRuns: the replica's id, lease timings and worker
// count come from flags or their environment variables; a bad value is
// refused with what was wrong.
func TestParseConfigDurableRuns(t *testing.T) {
	env := map[string]string{"STUDIO_REPLICA_ID": "r1", "STUDIO_LEASE_TTL": "3s", "STUDIO_RUN_WORKERS": "4"}
	cfg, err := parseConfig([]string{"-lease-renew", "250ms", "-reap-every", "1s"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Runs; r.ID != "r1" || r.LeaseTTL != 3*time.Second || r.RenewEvery != 250*time.Millisecond || r.ReapEvery != time.Second || r.Workers != 4 || r.ShutdownGrace != 10*time.Second {
		t.Fatalf("runs config %+v", r)
	}
	cfg, err = parseConfig([]string{"-shutdown-grace", "0"}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.Runs.ShutdownGrace != 0 {
		t.Fatalf("-shutdown-grace 0: %v %v, want 0 (hand back at once)", cfg.Runs.ShutdownGrace, err)
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-lease-ttl", "0s"}, nil, "lease-ttl"},
		{nil, map[string]string{"STUDIO_LEASE_TTL": "long"}, "STUDIO_LEASE_TTL"},
		{nil, map[string]string{"STUDIO_RUN_WORKERS": "many"}, "STUDIO_RUN_WORKERS"},
	} {
		_, err := parseConfig(bad.args, func(k string) string { return bad.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %v: err %v, want one naming %s", bad.args, bad.env, err, bad.want)
		}
	}
}

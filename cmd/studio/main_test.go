package main

import (
	"io"
	"strings"
	"testing"
	"time"
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

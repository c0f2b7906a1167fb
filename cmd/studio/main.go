// Command studio serves Superstep Studio.
//
// Configuration comes from flags, each mirroring an environment variable
// (the flag wins when both are set):
//
//	-addr          STUDIO_ADDR    listen address (default 127.0.0.1:8080)
//	-database-url  DATABASE_URL   Postgres with pgvector; empty = in-memory backends
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/superstep-dev/superstep/studio"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.DatabaseURL == "" {
		fmt.Fprint(os.Stderr, memoryBanner)
	}
	err = studio.Serve(ctx, cfg, func(addr net.Addr) {
		slog.Info("Superstep Studio is listening", slog.String("url", "http://"+addr.String()))
	})
	if err != nil {
		slog.Error("studio stopped", slog.Any("error", err))
		os.Exit(1)
	}
}

const memoryBanner = `
  ┌──────────────────────────────────────────────────────────────────────┐
  │ Superstep Studio is running on IN-MEMORY backends.                   │
  │ Checkpoints, the store and the node cache are lost when it stops.    │
  │ To keep them, set DATABASE_URL (or -database-url) to a Postgres      │
  │ database with pgvector; 'make run' starts a local one for you.       │
  └──────────────────────────────────────────────────────────────────────┘

`

// parseConfig reads flags, falling back to environment variables.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (studio.Config, error) {
	fs := flag.NewFlagSet("studio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg studio.Config
	fs.StringVar(&cfg.Addr, "addr", envOr(getenv, "STUDIO_ADDR", studio.DefaultAddr), "listen address (env STUDIO_ADDR)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres URL; empty = in-memory backends (env DATABASE_URL)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "studio: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return cfg, fmt.Errorf("unexpected arguments")
	}
	return cfg, nil
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// Package pgtest gives tests a real Postgres, in the manner of river's
// riverdbtest: one lazily built pool per test process from
// TEST_DATABASE_URL, migrated to the latest version; a transaction per test
// that is rolled back when the test ends (Tx); and a fresh schema per test
// for tests that must commit, LISTEN, or exercise the migrations themselves
// (Schema).
//
// When TEST_DATABASE_URL is missing a test is skipped, except under CI (the
// CI environment variable is set), where it fails: CI always provides
// Postgres, so a skipped database test there would hide a broken set-up.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/migrations"
)

// EnvURL names the environment variable that points tests at Postgres.
const EnvURL = "TEST_DATABASE_URL"

// URL returns the test database URL. Without one it skips the test, or
// fails it when running under CI.
func URL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv(EnvURL)
	if url != "" {
		return url
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s is not set, but CI is: CI must run database tests (use `make test`, which starts a local Postgres)", EnvURL)
	}
	tb.Skipf("%s is not set; `make test` starts a local Postgres and sets it", EnvURL)
	return ""
}

var shared struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// Pool returns the process-wide pool on the test database, migrated to the
// latest version in its default schema. Tests must not commit through it
// (use Tx); it is closed when the process exits.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := URL(tb)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			shared.err = err
			return
		}
		cfg.MaxConns = 10
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			shared.err = err
			return
		}
		if err := migrations.Up(ctx, pool); err != nil {
			pool.Close()
			shared.err = err
			return
		}
		shared.pool = pool
	})
	if shared.err != nil {
		tb.Fatalf("pgtest: open the test database: %v", shared.err)
	}
	return shared.pool
}

// Tx begins a transaction on the shared pool and rolls it back when the test
// ends, so nothing the test writes is ever seen by another test.
func Tx(tb testing.TB) pgx.Tx {
	tb.Helper()
	pool := Pool(tb)
	tx, err := pool.Begin(context.Background())
	if err != nil {
		tb.Fatalf("pgtest: begin: %v", err)
	}
	tb.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// SchemaOptions tune Schema. The zero value migrates the schema to the
// latest version.
type SchemaOptions struct {
	// Unmigrated leaves the new schema empty, for tests of the migrations.
	Unmigrated bool
}

// Schema creates a schema of its own for the test and returns a pool whose
// connections use it first in their search_path (then public, where shared
// extensions such as vector live). The schema and everything in it are
// dropped, and the pool closed, when the test ends.
func Schema(tb testing.TB, opts *SchemaOptions) *pgxpool.Pool {
	tb.Helper()
	if opts == nil {
		opts = &SchemaOptions{}
	}
	admin := Pool(tb)
	ctx := context.Background()
	name := "t_" + randomHex(tb, 8)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("pgtest: create schema: %v", err)
	}
	cfg := admin.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = name + ",public"
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("pgtest: open schema pool: %v", err)
	}
	tb.Cleanup(func() {
		pool.Close()
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	if !opts.Unmigrated {
		if err := migrations.Up(ctx, pool); err != nil {
			tb.Fatalf("pgtest: migrate schema %s: %v", name, err)
		}
	}
	return pool
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("pgtest: random: %v", err)
	}
	return hex.EncodeToString(b)
}

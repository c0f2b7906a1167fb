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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// Pool returns the process-wide pool on the test database. Its connections
// use a schema named after a hash of the embedded migration files, migrated
// to the latest version, so a test never runs against a schema built by
// older migrations. Tests must not commit through it (use Tx).
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := URL(tb)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.pool, shared.err = openShared(ctx, url)
	})
	if shared.err != nil {
		tb.Fatalf("pgtest: open the test database: %v", shared.err)
	}
	if b, ok := tb.(*testing.B); ok {
		reportDurability(b, shared.pool)
	}
	return shared.pool
}

// reportDurability says in a benchmark's output whether its Postgres
// commits durably: numbers from the fast test cluster (fsync off) are not
// comparable with a durable one's (scripts/dev-postgres PG_DURABLE=1,
// which `make bench` uses).
func reportDurability(b *testing.B, pool *pgxpool.Pool) {
	var fsync, commit string
	err := pool.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &commit)
	switch {
	case err != nil:
		b.Logf("Postgres durability unknown: %v", err)
	case fsync == "on" && commit != "off":
		b.Logf("Postgres: fsync=%s synchronous_commit=%s: durable", fsync, commit)
	default:
		b.Logf("Postgres: fsync=%s synchronous_commit=%s: NOT durable, a test cluster; use make bench", fsync, commit)
	}
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
	// Dial, when set, opens the pool's connections (Proxy.Dial routes
	// them through a Proxy that can break them).
	Dial pgconn.DialFunc
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
	cfg.ConnConfig.RuntimeParams = maps.Clone(cfg.ConnConfig.RuntimeParams)
	cfg.ConnConfig.RuntimeParams["search_path"] = name + ",public"
	cfg.MaxConns = 4
	if opts.Dial != nil {
		cfg.ConnConfig.DialFunc = opts.Dial
	}
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

func openShared(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	schema, err := migrationsSchema()
	if err != nil {
		return nil, err
	}
	// Create the schema under an advisory lock: test binaries of several
	// packages start at once, and CREATE SCHEMA IF NOT EXISTS races.
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext('superstep-pgtest'))"); err != nil {
		return nil, err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(hashtext('superstep-pgtest'))") //nolint:errcheck
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, err
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema + ",public"
	cfg.MaxConns = 10
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// migrationsSchema names the shared schema after the migration files.
func migrationsSchema() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "pgtest_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("pgtest: random: %v", err)
	}
	return hex.EncodeToString(b)
}

package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/superstep-dev/superstep/internal/logfilter"
)

//go:embed *.sql
var files embed.FS

// VersionTable is the table in which tern records the applied version. It
// lives in the connection's current schema (the first of its search_path),
// next to the tables the migrations create, so a test can migrate a
// throwaway schema of its own. It is always schema-qualified when used:
// unqualified, tern would find another schema's version table through the
// search_path and skip migrations.
const VersionTable = "superstep_schema_version"

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// Latest is the version of the newest embedded migration.
func Latest() int32 {
	names, err := migrate.FindMigrations(files)
	if err != nil {
		// The embedded files are checked by TestEmbeddedMigrationsAreWellFormed;
		// a malformed set is a build-time mistake, not a runtime condition.
		panic(fmt.Sprintf("migrations: embedded files are malformed: %v", err))
	}
	return int32(len(names))
}

// RiverVersion is the version of river's own schema (its main migration
// line, recorded in its river_migration table) that Superstep installs: the
// newest one in the river release go.mod requires. It is pinned rather than
// "whatever the module has" so that upgrading river is a visible change,
// which TestRiverVersionIsRiversNewest reminds of.
const RiverVersion = 8

// RiverSince is the first Superstep version whose schema includes river's:
// To installs river's tables (at RiverVersion) whenever its target is
// RiverSince or more, and removes them before going below it.
//
// Latest and Current count Superstep's own migrations only, and river's
// version is not folded into them: a river upgrade bumps RiverVersion
// without a new Superstep migration, and Up, which every Studio runs at
// start, applies it anyway. So Current() == Latest() after Up means both
// schemas are in place, and river's version is read from river_migration.
const RiverSince = 11

// lockKey is the session advisory lock that serialises whole migrations
// (Superstep's and river's) of every process on the database. tern locks
// only around its own MigrateTo, and its NewMigrator creates the version
// table before that, unlocked; rivermigrate takes no lock at all (each of
// its migrations is a transaction of its own, so two replicas would both
// try to create river's tables and one would fail). The key is fixed, not
// per schema: migrations are rare and short, and tern's own lock is
// database-wide already.
const lockKey = int64(0x5375706572737465) // "Superste"

// Up applies every migration that has not been applied yet, river's
// included.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	return To(ctx, pool, Latest())
}

// To migrates up or down until the schema is at version target (0 removes
// everything the migrations created, river's tables included). It holds one
// of pool's connections for the whole migration and runs river's migrations
// on another, so pool must allow at least two.
func To(ctx context.Context, pool *pgxpool.Pool, target int32) error {
	if target < 0 || target > Latest() {
		return fmt.Errorf("migrations: target version %d is out of range 0..%d", target, Latest())
	}
	if n := pool.Config().MaxConns; n < 2 {
		return fmt.Errorf("migrations: the pool allows %d connection(s); migrating needs 2 (one holds the migration lock, river migrates on another)", n)
	}
	return withMigrator(ctx, pool, func(m *migrate.Migrator, schema string) error {
		current, err := m.GetCurrentVersion(ctx)
		if err != nil {
			return fmt.Errorf("migrations: current version: %w", err)
		}
		river, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
			// Qualified, so river's tables land in the connection's
			// schema (a test's own, say) and not wherever its search_path
			// finds a river_migration first.
			Schema: schema,
			Logger: slog.New(logfilter.Warnings(slog.Default().Handler())),
		})
		if err != nil {
			return fmt.Errorf("migrations: river migrator: %w", err)
		}
		// Only when Superstep's schema has river's: a schema below
		// RiverSince has none of ours to remove.
		if target < RiverSince && current >= RiverSince {
			if _, err := river.Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{TargetVersion: -1}); err != nil {
				return fmt.Errorf("migrations: remove river's schema: %w", err)
			}
		}
		if err := m.MigrateTo(ctx, target); err != nil {
			return fmt.Errorf("migrations: migrate to version %d: %w", target, err)
		}
		if target >= RiverSince {
			if _, err := river.Migrate(ctx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{TargetVersion: RiverVersion}); err != nil {
				return fmt.Errorf("migrations: install river's schema at version %d: %w", RiverVersion, err)
			}
		}
		return nil
	})
}

// Current returns the version the database's schema is at (0 when nothing
// has been applied), counting Superstep's migrations only (see RiverSince).
func Current(ctx context.Context, pool *pgxpool.Pool) (int32, error) {
	var v int32
	err := withMigrator(ctx, pool, func(m *migrate.Migrator, _ string) error {
		var err error
		v, err = m.GetCurrentVersion(ctx)
		return err
	})
	return v, err
}

// withMigrator runs fn holding lockKey on one connection, with a tern
// migrator on that connection and the connection's current schema.
func withMigrator(ctx context.Context, pool *pgxpool.Pool, fn func(m *migrate.Migrator, schema string) error) (err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: acquire connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("migrations: take the migration lock: %w", err)
	}
	defer func() {
		// Even when ctx is done: the connection goes back to the pool.
		uctx := context.WithoutCancel(ctx)
		if _, uerr := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", lockKey); uerr != nil {
			// A pooled session must not keep the lock: closing it
			// releases the lock, and the pool drops a closed connection.
			_ = conn.Conn().Close(uctx)
			if err == nil {
				err = fmt.Errorf("migrations: release the migration lock: %w", uerr)
			}
		}
	}()
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return fmt.Errorf("migrations: current schema: %w", err)
	}
	table := pgx.Identifier{schema, VersionTable}.Sanitize()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), table)
	if err != nil {
		return fmt.Errorf("migrations: create migrator: %w", err)
	}
	if err := m.LoadMigrations(files); err != nil {
		return fmt.Errorf("migrations: load embedded files: %w", err)
	}
	return fn(m, schema)
}

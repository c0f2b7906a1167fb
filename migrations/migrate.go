package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
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

// Up applies every migration that has not been applied yet.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	return To(ctx, pool, Latest())
}

// To migrates up or down until the schema is at version target (0 removes
// everything the migrations created).
func To(ctx context.Context, pool *pgxpool.Pool, target int32) error {
	if target < 0 || target > Latest() {
		return fmt.Errorf("migrations: target version %d is out of range 0..%d", target, Latest())
	}
	return withMigrator(ctx, pool, func(m *migrate.Migrator) error {
		if err := m.MigrateTo(ctx, target); err != nil {
			return fmt.Errorf("migrations: migrate to version %d: %w", target, err)
		}
		return nil
	})
}

// Current returns the version the database's schema is at (0 when nothing
// has been applied).
func Current(ctx context.Context, pool *pgxpool.Pool) (int32, error) {
	var v int32
	err := withMigrator(ctx, pool, func(m *migrate.Migrator) error {
		var err error
		v, err = m.GetCurrentVersion(ctx)
		return err
	})
	return v, err
}

func withMigrator(ctx context.Context, pool *pgxpool.Pool, fn func(*migrate.Migrator) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrations: acquire connection: %w", err)
	}
	defer conn.Release()
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
	return fn(m)
}

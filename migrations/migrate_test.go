package migrations_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/superstep-dev/superstep/internal/pgtest"
	"github.com/superstep-dev/superstep/migrations"
)

func TestEmbeddedMigrationsAreWellFormed(t *testing.T) {
	t.Parallel()
	names, err := migrate.FindMigrations(migrations.FS())
	if err != nil {
		t.Fatalf("numbering: %v", err)
	}
	if len(names) == 0 || int32(len(names)) != migrations.Latest() {
		t.Fatalf("Latest() = %d, files = %v", migrations.Latest(), names)
	}
	for _, name := range names {
		body, err := fs.ReadFile(migrations.FS(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "---- create above / drop below ----") {
			t.Errorf("%s has no down section: every migration must be reversible", name)
		}
	}
}

// TestUpDownUp applies every migration, rolls each one back in turn, and
// applies them again, checking after each step that the schema is exactly
// what it was at that version before: a down migration that forgets a table
// or an index fails here.
func TestUpDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})

	snapshots := map[int32][]string{0: catalog(t, pool)}
	for v := int32(1); v <= migrations.Latest(); v++ {
		if err := migrations.To(ctx, pool, v); err != nil {
			t.Fatalf("up to %d: %v", v, err)
		}
		snapshots[v] = catalog(t, pool)
	}
	if got, err := migrations.Current(ctx, pool); err != nil || got != migrations.Latest() {
		t.Fatalf("Current() = %d, %v; want %d", got, err, migrations.Latest())
	}
	for v := migrations.Latest() - 1; v >= 0; v-- {
		if err := migrations.To(ctx, pool, v); err != nil {
			t.Fatalf("down to %d: %v", v, err)
		}
		if got := catalog(t, pool); !slices.Equal(got, snapshots[v]) {
			t.Fatalf("after down to %d the schema differs from the one at %d:\n got %v\nwant %v", v, v, got, snapshots[v])
		}
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := catalog(t, pool); !slices.Equal(got, snapshots[migrations.Latest()]) {
		t.Fatalf("second up gives a different schema:\n got %v\nwant %v", got, snapshots[migrations.Latest()])
	}
}

func TestToRejectsUnknownVersion(t *testing.T) {
	t.Parallel()
	pool := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})
	err := migrations.To(context.Background(), pool, migrations.Latest()+1)
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("To(latest+1) = %v, want an out-of-range error", err)
	}
}

// catalog lists the relations, columns and indexes of the pool's own
// schema, excluding the migration bookkeeping table.
func catalog(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT c.relkind::text || ' ' || c.relname ||
		       coalesce(' ' || pg_get_indexdef(c.oid), '') ||
		       coalesce((SELECT ' (' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) || ')'
		                   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r','p','v','m')), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relname <> $1 AND c.relname NOT LIKE $1 || '%'
		ORDER BY 1`, migrations.VersionTable)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMigratedSchemaLaterInSearchPathIsIgnored: a schema that is already
// migrated, reachable through the search_path, must not make the migrator
// believe the current schema is migrated too.
func TestMigratedSchemaLaterInSearchPathIsIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	migrated := pgtest.Schema(t, nil)
	var other string
	if err := migrated.QueryRow(ctx, "SELECT current_schema()").Scan(&other); err != nil {
		t.Fatal(err)
	}
	fresh := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})
	var own string
	if err := fresh.QueryRow(ctx, "SELECT current_schema()").Scan(&own); err != nil {
		t.Fatal(err)
	}
	cfg := fresh.Config().Copy()
	cfg.ConnConfig.RuntimeParams = map[string]string{"search_path": own + "," + other + ",public"}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if v, err := migrations.Current(ctx, pool); err != nil || v != 0 {
		t.Fatalf("Current() in a fresh schema = %d, %v; want 0", v, err)
	}
	if err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if got := catalog(t, pool); len(got) == 0 {
		t.Fatal("migrations created nothing in the fresh schema")
	}
}

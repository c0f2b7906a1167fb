package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

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

// catalog lists the relations, columns, indexes and functions (whole
// definitions) of the pool's own schema, excluding the migration
// bookkeeping table.
func catalog(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT c.relkind::text || ' ' || c.relname ||
		       coalesce(' ' || pg_get_indexdef(c.oid), '') ||
		       coalesce((SELECT ' (' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) || ')'
		                   FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r','p','v','m')), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relname <> $1 AND c.relname NOT LIKE $1 || '%'
		UNION ALL
		SELECT 'function ' || pg_get_functiondef(p.oid)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = current_schema() AND p.prokind = 'f'
		ORDER BY 1`, migrations.VersionTable)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
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

// TestRiverVersionIsRiversNewest fails when go.mod's river brings migrations
// that RiverVersion does not install yet: bump it (and read river's
// changelog for what they need).
func TestRiverVersionIsRiversNewest(t *testing.T) {
	t.Parallel()
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	all := m.AllVersions()
	if newest := all[len(all)-1].Version; newest != migrations.RiverVersion {
		t.Fatalf("river's newest migration is %d, RiverVersion is %d", newest, migrations.RiverVersion)
	}
	if migrations.RiverSince > migrations.Latest() {
		t.Fatalf("RiverSince = %d is beyond Latest() = %d", migrations.RiverSince, migrations.Latest())
	}
}

func TestUpInstallsRiverInTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'river_job'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("river_job tables in the pool's schema: %d, want 1", n)
	}
	if v := riverVersion(t, pool); v != migrations.RiverVersion {
		t.Fatalf("river's version = %d, want %d", v, migrations.RiverVersion)
	}
	if got, err := migrations.Current(ctx, pool); err != nil || got != migrations.Latest() {
		t.Fatalf("Current() = %d, %v; want %d", got, err, migrations.Latest())
	}
}

func TestToZeroRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	if err := migrations.To(ctx, pool, 0); err != nil {
		t.Fatal(err)
	}
	if got := catalog(t, pool); len(got) != 0 {
		t.Fatalf("To(0) left relations behind: %v", got)
	}
	var left []string
	rows, err := pool.Query(ctx, `
		SELECT 'function ' || p.proname FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
		UNION ALL
		SELECT 'type ' || t.typname FROM pg_type t WHERE t.typnamespace = current_schema()::regnamespace AND t.typtype IN ('e', 'd')`)
	if err != nil {
		t.Fatal(err)
	}
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("To(0) left behind: %v", left)
	}
	if v, err := migrations.Current(ctx, pool); err != nil || v != 0 {
		t.Fatalf("Current() after To(0) = %d, %v; want 0", v, err)
	}
}

// TestConcurrentUp starts three "replicas" on one fresh schema at once:
// all must succeed and leave the schema a single Up gives.
func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	want := pgtest.Schema(t, nil)
	fresh := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		pool, err := pgxpool.NewWithConfig(ctx, fresh.Config().Copy())
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		wg.Go(func() { errs[i] = migrations.Up(ctx, pool) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Up: %v", err)
	}
	if got, err := migrations.Current(ctx, fresh); err != nil || got != migrations.Latest() {
		t.Fatalf("Current() = %d, %v; want %d", got, err, migrations.Latest())
	}
	if v := riverVersion(t, fresh); v != migrations.RiverVersion {
		t.Fatalf("river's version = %d, want %d", v, migrations.RiverVersion)
	}
	if got, exp := unqualified(t, fresh), unqualified(t, want); !slices.Equal(got, exp) {
		t.Fatalf("schema after concurrent Up differs from a single Up's:\n got %v\nwant %v", got, exp)
	}
}

func TestToNeedsTwoConnections(t *testing.T) {
	t.Parallel()
	fresh := pgtest.Schema(t, &pgtest.SchemaOptions{Unmigrated: true})
	cfg := fresh.Config().Copy()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrations.Up(context.Background(), pool); err == nil || !strings.Contains(err.Error(), "needs 2") {
		t.Fatalf("Up on a one-connection pool = %v, want an error saying it needs 2 (it would wait forever)", err)
	}
}

func TestStudioFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := pgtest.Tx(t)
	if _, err := tx.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, holder) VALUES ('held', 3, 'replica-a'), ('waiting', 3, '')`); err != nil {
		t.Fatal(err)
	}
	fence := func(thread string, token int64) error {
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Rollback(ctx) //nolint:errcheck
		_, err = sp.Exec(ctx, "SELECT studio_fence($1, $2)", thread, token)
		return err
	}
	if err := fence("held", 3); err != nil {
		t.Fatalf("the holder's fence: %v", err)
	}
	// Released by its holder (the fence stays): the run's last records,
	// retried, still land until someone claims the thread.
	if err := fence("waiting", 3); err != nil {
		t.Fatalf("the fence of a released lease: %v", err)
	}
	for _, c := range []struct {
		thread string
		token  int64
	}{{"held", 2}, {"held", 4}, {"waiting", 2}, {"unknown", 0}} {
		err := fence(c.thread, c.token)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "SSF01" || !strings.Contains(pgErr.Message, c.thread) {
			t.Errorf("studio_fence(%q, %d) = %v; want SQLSTATE SSF01 naming the thread", c.thread, c.token, err)
		}
	}
}

// TestFenceChecksItsOwnSchema: studio_fence checks the leases of the
// schema it was migrated into, whatever the caller's search_path finds
// first. Two schemas hold thread t at fences 1 and 2; each schema's
// function, called from a connection to the other schema, admits its own
// fence and refuses the other's.
func TestFenceChecksItsOwnSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pools := []*pgxpool.Pool{pgtest.Schema(t, nil), pgtest.Schema(t, nil)}
	schemas := make([]string, len(pools))
	for i, pool := range pools {
		if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schemas[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, holder, fence) VALUES ('t', 'w', $1)`, i+1); err != nil {
			t.Fatal(err)
		}
	}
	for own := range pools {
		caller := pools[1-own]
		fn := pgx.Identifier{schemas[own], "studio_fence"}.Sanitize()
		for fence := int64(1); fence <= 2; fence++ {
			_, err := caller.Exec(ctx, fmt.Sprintf(`SELECT %s($1, $2)`, fn), "t", fence)
			var pgErr *pgconn.PgError
			if want := fence == int64(own+1); want != (err == nil) || (err != nil && (!errors.As(err, &pgErr) || pgErr.Code != "SSF01")) {
				t.Errorf("%s('t', %d) from %s's connection: %v; want admitted %v", fn, fence, schemas[1-own], err, want)
			}
		}
	}
}

// TestStudioFenceHoldsOffATakeover: while a fenced write's transaction is
// open, an UPDATE of the lease row (a takeover bumping the fence) waits.
func TestStudioFenceHoldsOffATakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Schema(t, nil)
	if _, err := pool.Exec(ctx, `INSERT INTO studio_thread_leases (thread_id, fence, holder) VALUES ('th', 3, 'replica-a')`); err != nil {
		t.Fatal(err)
	}
	write, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer write.Rollback(ctx) //nolint:errcheck
	if _, err := write.Exec(ctx, "SELECT studio_fence('th', 3)"); err != nil {
		t.Fatal(err)
	}
	takeover, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer takeover.Rollback(ctx) //nolint:errcheck
	if _, err := takeover.Exec(ctx, "SET LOCAL lock_timeout = '200ms'"); err != nil {
		t.Fatal(err)
	}
	_, err = takeover.Exec(ctx, "UPDATE studio_thread_leases SET fence = fence + 1, holder = '' WHERE thread_id = 'th'")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("takeover during a fenced write = %v; want it to wait on the row lock (lock_not_available)", err)
	}
	if err := write.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "UPDATE studio_thread_leases SET fence = fence + 1, holder = '' WHERE thread_id = 'th'"); err != nil {
		t.Fatalf("takeover after the write committed: %v", err)
	}
}

func riverVersion(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var schema string
	if err := pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	versions, err := m.ExistingVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) == 0 {
		return 0
	}
	return versions[len(versions)-1].Version
}

// unqualified is catalog with the schema's name taken out of index
// definitions, to compare two schemas.
func unqualified(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	var schema string
	if err := pool.QueryRow(context.Background(), "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	got := catalog(t, pool)
	for i, s := range got {
		got[i] = strings.ReplaceAll(s, schema+".", "")
	}
	return got
}

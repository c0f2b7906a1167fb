package pgtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMissingURLFailsUnderCI re-runs itself without TEST_DATABASE_URL:
// under CI the database test must fail, elsewhere skip. In the child
// process it is that database test.
func TestMissingURLFailsUnderCI(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		URL(t)
		return
	}
	t.Parallel()
	for _, tc := range []struct {
		ci       string
		wantFail bool
		wantText string
	}{
		{ci: "true", wantFail: true, wantText: "CI must run database tests"},
		{ci: "", wantFail: false, wantText: "SKIP"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingURLFailsUnderCI$", "-test.v")
		cmd.Env = append(filteredEnv(), "PGTEST_CHILD=1", "CI="+tc.ci)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v; output:\n%s", tc.ci, failed, tc.wantFail, out)
		}
		if !strings.Contains(string(out), tc.wantText) {
			t.Errorf("CI=%q: output lacks %q:\n%s", tc.ci, tc.wantText, out)
		}
	}
}

func filteredEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvURL+"=") && !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	return env
}

func TestTxIsRolledBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var table string
	t.Run("writer", func(t *testing.T) {
		tx := Tx(t)
		table = "pgtest_probe_" + randomHex(t, 4)
		if _, err := tx.Exec(ctx, "CREATE TABLE "+table+" (x int)"); err != nil {
			t.Fatal(err)
		}
	})
	var exists bool
	if err := Pool(t).QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("table %s survived its test's transaction", table)
	}
}

func TestSchemaIsIsolatedAndDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var schema string
	t.Run("user", func(t *testing.T) {
		pool := Schema(t, nil)
		if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(schema, "t_") {
			t.Fatalf("current_schema = %q, want the test's own schema", schema)
		}
		if _, err := pool.Exec(ctx, "CREATE TABLE committed (x int); INSERT INTO committed VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	})
	var n int
	if err := Pool(t).QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("schema %s was not dropped", schema)
	}
}

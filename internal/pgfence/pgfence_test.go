package pgfence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/internal/pgfence"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

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
			err = pgfence.Map(err)
			if want := fence == int64(own+1); want != (err == nil) || (err != nil && !errors.Is(err, checkpoints.ErrFenced)) {
				t.Errorf("%s('t', %d) from %s's connection: %v; want admitted %v", fn, fence, schemas[1-own], err, want)
			}
		}
	}
}

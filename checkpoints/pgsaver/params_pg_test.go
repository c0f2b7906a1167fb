package pgsaver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// sqlTracer records the statements a pool's connections run.
type sqlTracer struct {
	mu  sync.Mutex
	sql []string
}

func (r *sqlTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql = append(r.sql, data.SQL)
	return ctx
}

func (r *sqlTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// oneSession is a pool of one connection on a fresh schema, so that a
// test sees that session's prepared statements, with its connection
// config changed by set (if not nil).
func oneSession(t *testing.T, set func(*pgx.ConnConfig)) *pgxpool.Pool {
	t.Helper()
	cfg := pgtest.Schema(t, nil).Config()
	cfg.MaxConns = 1
	if set != nil {
		set(cfg.ConnConfig)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// putStep puts step i of a counter on parent's thread: n is i, at
// version i+1. It returns the new checkpoint's config.
func putStep(t *testing.T, s *pgsaver.Saver, parent checkpoints.Config, i int) checkpoints.Config {
	t.Helper()
	return putStepIn(context.Background(), t, s, parent, i)
}

// putStepIn is putStep in ctx (which may carry a fence).
func putStepIn(ctx context.Context, t *testing.T, s *pgsaver.Saver, parent checkpoints.Config, i int) checkpoints.Config {
	t.Helper()
	cp := &checkpoints.Checkpoint{V: checkpoints.FormatVersion, ID: checkpoints.NewID(), TS: time.Now(),
		ChannelValues: map[string]json.RawMessage{"n": json.RawMessage(strconv.Itoa(i))}, ChannelVersions: map[string]int64{"n": int64(i + 1)}}
	put, err := s.Put(ctx, parent, cp, checkpoints.Metadata{Source: checkpoints.SourceLoop, Step: i}, map[string]int64{"n": int64(i + 1)})
	if err != nil {
		t.Fatalf("put %d: %v", i, err)
	}
	return put
}

// A put's checkpoint row goes as a statement the saver prepares and
// encodes itself only on a pool whose connections prepare statements
// (pgx's default exec mode) and have no tracer: a tracer still sees it,
// and a pool set not to prepare (as behind a transaction pooler) gets no
// prepared statement. (The exec and simple-protocol modes, which infer
// parameter types from Go values, never could put: metadata goes as a
// []byte, which they send as bytea to a jsonb parameter.)
func TestPutPreparesOnlyWherePgxWould(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		set      func(*pgx.ConnConfig, *sqlTracer)
		prepared bool
	}{
		"default":  {set: func(*pgx.ConnConfig, *sqlTracer) {}, prepared: true},
		"tracer":   {set: func(c *pgx.ConnConfig, r *sqlTracer) { c.Tracer = r }},
		"describe": {set: func(c *pgx.ConnConfig, _ *sqlTracer) { c.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tracer := &sqlTracer{}
			pool := oneSession(t, func(c *pgx.ConnConfig) { tc.set(c, tracer) })
			s := pgsaver.New(pool, nil)
			put := checkpoints.Config{ThreadID: "t"}
			for i := range 3 {
				put = putStep(t, s, put, i)
			}
			tuple, err := s.Get(ctx, put)
			if err != nil || tuple == nil || string(tuple.Checkpoint.ChannelValues["n"]) != "2" || tuple.Metadata.Step != 2 {
				t.Fatalf("latest checkpoint: %+v, %v", tuple, err)
			}
			var prepared bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name LIKE 'pgsaver\_%')`).Scan(&prepared); err != nil {
				t.Fatal(err)
			}
			if prepared != tc.prepared {
				t.Errorf("the saver prepared a statement of its own: %v, want %v", prepared, tc.prepared)
			}
			if pool.Config().ConnConfig.Tracer != nil {
				tracer.mu.Lock()
				defer tracer.mu.Unlock()
				n := 0
				for _, sql := range tracer.sql {
					if strings.Contains(sql, "INSERT INTO checkpoints") {
						n++
					}
				}
				if n != 3 {
					t.Errorf("the tracer saw %d puts, want 3", n)
				}
			}
		})
	}
}

// A session whose prepared statements were dropped under the saver (a
// DEALLOCATE, or a pooler's DISCARD ALL) still puts: the saver prepares
// its statement again instead of failing the put.
func TestPutPreparesAgainWhatTheServerForgot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fence     bool
		statement string
	}{
		{"unfenced", false, "pgsaver_put_inline"},
		{"fenced", true, "pgsaver_put_inline_fenced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := oneSession(t, nil) // whose statements the DEALLOCATE drops
			s := pgsaver.New(pool, nil)
			pctx := ctx
			if tc.fence {
				pgsaver.HoldLease(t, pool, "t", 1)
				pctx = checkpoints.WithFence(ctx, checkpoints.Fence{Thread: "t", Token: 1})
			}
			put := checkpoints.Config{ThreadID: "t"}
			for i := range 4 {
				if i == 2 {
					if _, err := pool.Exec(ctx, `DEALLOCATE `+tc.statement); err != nil {
						t.Fatal(err)
					}
				}
				put = putStepIn(pctx, t, s, put, i)
			}
			tuple, err := s.Get(ctx, checkpoints.Config{ThreadID: "t"})
			if err != nil || tuple == nil || string(tuple.Checkpoint.ChannelValues["n"]) != "3" || tuple.Metadata.Step != 3 {
				t.Fatalf("latest checkpoint: %+v, %v", tuple, err)
			}
		})
	}
}

package pgcache_test

import (
	"context"
	"testing"
	"time"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/cache/pgcache"
	"github.com/superstep-dev/superstep/internal/pgtest"
)

// The node cache rides out a dropped connection and a server refusing
// reconnections for a while: a cached node's run does not fail because
// its cache lookup met a database restart.
func TestCacheOutlivesConnectionFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := pgtest.NewProxy(t)
	pool := pgtest.Schema(t, &pgtest.SchemaOptions{Dial: proxy.Dial})
	c, err := pgcache.New(pool, &pgcache.Options{RetryWindow: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	k := cache.Key{Namespace: "n", Key: "k"}
	if err := c.Set(ctx, []cache.Entry{{Key: k, Value: []byte(`"v1"`)}}); err != nil {
		t.Fatal(err)
	}
	proxy.Refuse(4)
	proxy.Cut()
	if err := c.Set(ctx, []cache.Entry{{Key: k, Value: []byte(`"v2"`)}}); err != nil {
		t.Fatalf("set across the fault: %v", err)
	}
	proxy.Refuse(4)
	proxy.Cut()
	got, err := c.Get(ctx, []cache.Key{k})
	if err != nil || string(got[k]) != `"v2"` {
		t.Fatalf("get across the fault: %q, %v", got[k], err)
	}
	if _, refused := proxy.Counts(); refused < 8 {
		t.Fatalf("the proxy refused %d connections; the faults were not exercised", refused)
	}
	off, err := pgcache.New(pool, &pgcache.Options{RetryWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	proxy.Refuse(-1)
	proxy.Cut()
	if _, err := off.Get(ctx, []cache.Key{k}); err == nil {
		t.Fatal("a get with the database gone and no retry succeeded")
	}
	proxy.Accept()
}

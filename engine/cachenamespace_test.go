package engine_test

import (
	"testing"

	"github.com/superstep-dev/superstep/engine"
)

func TestParseCacheNamespace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ns, identity, node string
		ok                 bool
	}{
		{"__pregel_ns_writes|abc123|lookup", "abc123", "lookup", true},
		{"__pregel_ns_writes|a|b|lookup", "a|b", "lookup", true},
		{"__pregel_ns_writes|__dynamic__|n", "__dynamic__", "n", true},
		{"__pregel_ns_writes||lookup", "", "", false},
		{"__pregel_ns_writes|abc|", "", "", false},
		{"__pregel_ns_writes|lookup", "", "", false},
		{"other|abc|lookup", "", "", false},
		{"", "", "", false},
	}
	for _, c := range cases {
		if c.ok && engine.CacheNamespace(c.identity, c.node) != c.ns {
			t.Errorf("CacheNamespace(%q, %q) != %q", c.identity, c.node, c.ns)
		}
		identity, node, ok := engine.ParseCacheNamespace(c.ns)
		if identity != c.identity || node != c.node || ok != c.ok {
			t.Errorf("engine.ParseCacheNamespace(%q) = %q, %q, %v; want %q, %q, %v", c.ns, identity, node, ok, c.identity, c.node, c.ok)
		}
	}
}

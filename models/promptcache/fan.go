package promptcache

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// fanGroup is one lead-then-fan group: the calls that share a prefix and
// start together. The first leads; released closes when its reply's
// first byte arrives (or it fails), and the others go.
type fanGroup struct {
	prefix   string
	released chan struct{}
	once     sync.Once
}

func (g *fanGroup) release() { g.once.Do(func() { close(g.released) }) }

// fanWait makes a call that opted into lead-then-fan the group's leader,
// or waits for the leader's first byte.
func (c *Cache) fanWait(ctx context.Context, cl *call) error {
	t := cl.site.task
	name := cl.site.fan.group
	if name == "" {
		name = cl.site.lineageKey
	}
	prefix := cl.ts.id + "\x00" + name + "\x00"
	key := prefix + fmt.Sprintf("%s\x00%d", t.CheckpointID, t.Step)
	c.mu.Lock()
	g := c.fans[key]
	if g == nil {
		// A new step of the same group: the groups of earlier steps are
		// released and no longer needed.
		for k, old := range c.fans {
			if strings.HasPrefix(k, prefix) && old.isReleased() {
				delete(c.fans, k)
			}
		}
		g = &fanGroup{prefix: prefix, released: make(chan struct{})}
		c.fans[key] = g
		c.mu.Unlock()
		cl.fan, cl.leader = g, true
		return nil
	}
	c.mu.Unlock()
	if c.onWait != nil {
		c.onWait()
	}
	select {
	case <-g.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *fanGroup) isReleased() bool {
	select {
	case <-g.released:
		return true
	default:
		return false
	}
}

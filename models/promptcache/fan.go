package promptcache

import (
	"context"
	"fmt"
	"sync"
)

// fanGroup is one lead-then-fan group: the calls that share a prefix and
// start together. The first leads; released closes when its reply's
// first byte arrives (or it fails), and the others go.
type fanGroup struct {
	key      string
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
	key := cl.ts.id + "\x00" + name + "\x00" + fmt.Sprintf("%s\x00%d", t.CheckpointID, t.Step)
	c.mu.Lock()
	g := c.fans[key]
	if g == nil {
		g = &fanGroup{key: key, released: make(chan struct{})}
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

// fanDone ends a leader's group when its call ends: the group is
// released (a leader that failed before its first byte frees the
// others too) and dropped, so the groups held are only those whose
// leader is in flight. A call of the same group that starts later leads
// a new group: it goes at once and reads what the finished leader wrote.
// Outside a node (no checkpoint, no step), where every call of a thread
// and group has the same key, this is what makes each burst of calls
// lead anew instead of the first call of the process leading for ever.
func (c *Cache) fanDone(g *fanGroup) {
	g.release()
	c.mu.Lock()
	if c.fans[g.key] == g {
		delete(c.fans, g.key)
	}
	c.mu.Unlock()
}

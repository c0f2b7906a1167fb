package promptcache

import (
	"context"
	"fmt"
	"strings"

	"github.com/superstep-dev/superstep/models"
)

// SystemSection is one section of a system prompt built by Cache.System:
// memoised (Section), recomputed on every call (DangerousUncachedSection)
// or the boundary between the static and dynamic parts (Boundary).
type SystemSection struct {
	name     string
	compute  func(ctx context.Context) (string, error)
	uncached bool
	reason   string
	boundary bool
}

// Section is a system prompt section computed once per thread, on its
// first use, and memoised by name with the thread's latches (persisted,
// so a restart does not recompute it: a date or a file read stays what it
// was). Reset recomputes it.
func Section(name string, compute func(ctx context.Context) (string, error)) SystemSection {
	return SystemSection{name: name, compute: compute}
}

// DangerousUncachedSection is a section recomputed on every call. Any
// change of its text busts the cache from its position on, so reason —
// required — says why it must change; System refuses an empty one
// (ErrNoReason). Put such sections after the Boundary.
func DangerousUncachedSection(name string, compute func(ctx context.Context) (string, error), reason string) SystemSection {
	return SystemSection{name: name, compute: compute, uncached: true, reason: reason}
}

// Boundary separates the static sections (before it: the same for every
// user of a build) from the dynamic ones (session facts, memory, the
// user's language). The static part gets the system prompt's cache
// marker; without a Boundary every section is static.
func Boundary() SystemSection { return SystemSection{boundary: true} }

// System builds the system message of the calling thread from sections,
// joined by a blank line: the static part (up to the Boundary) as one
// text block marked for caching, the dynamic part as a second block. The
// Hooks find the marker there and give it the thread's TTL. Outside a
// thread (no node, no WithThread) nothing is memoised.
func (c *Cache) System(ctx context.Context, sections ...SystemSection) (models.Message, error) {
	site := siteOf(ctx)
	ts, err := c.thread(ctx, site.thread)
	if err != nil {
		return models.Message{}, err
	}
	var static, dynamic []string
	part := &static
	changed := false
	for _, s := range sections {
		if s.boundary {
			part = &dynamic
			continue
		}
		if s.compute == nil {
			return models.Message{}, fmt.Errorf("promptcache: section %q has no compute function", s.name)
		}
		if s.uncached && strings.TrimSpace(s.reason) == "" {
			return models.Message{}, fmt.Errorf("%w (section %q)", ErrNoReason, s.name)
		}
		text, memo, err := c.section(ctx, ts, s)
		if err != nil {
			return models.Message{}, err
		}
		changed = changed || memo
		if text != "" {
			*part = append(*part, text)
		}
	}
	if changed {
		ts.mu.Lock()
		err := c.saveLatches(ctx, ts)
		ts.mu.Unlock()
		if err != nil {
			return models.Message{}, err
		}
	}
	var blocks []models.Block
	if len(static) > 0 {
		b := models.TextBlock(strings.Join(static, "\n\n"))
		b["cache_control"] = map[string]any{"type": "ephemeral"}
		blocks = append(blocks, b)
	}
	if len(dynamic) > 0 {
		blocks = append(blocks, models.TextBlock(strings.Join(dynamic, "\n\n")))
	}
	return models.Message{Type: models.TypeSystem, Content: models.Blocks(blocks...)}, nil
}

// section computes one section, from the thread's memo when it is a
// cached one; memo reports a new memo entry.
func (c *Cache) section(ctx context.Context, ts *threadState, s SystemSection) (text string, memo bool, err error) {
	if !s.uncached && ts.id != "" {
		ts.mu.Lock()
		text, ok := ts.latches.Sections[s.name]
		ts.mu.Unlock()
		if ok {
			return text, false, nil
		}
	}
	text, err = s.compute(ctx)
	if err != nil {
		return "", false, fmt.Errorf("promptcache: section %q: %w", s.name, err)
	}
	if s.uncached || ts.id == "" {
		return text, false, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if prev, ok := ts.latches.Sections[s.name]; ok {
		return prev, false, nil // a concurrent call memoised it first
	}
	if ts.latches.Sections == nil {
		ts.latches.Sections = map[string]string{}
	}
	ts.latches.Sections[s.name] = text
	return text, true, nil
}

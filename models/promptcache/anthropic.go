package promptcache

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/zeebo/xxh3"

	"github.com/superstep-dev/superstep/models"
)

// betaHeader is Anthropic's beta-flags header.
const betaHeader = "anthropic-beta"

// blockPos is one message content block of a rendered request.
type blockPos struct {
	msg, blk  int
	cacheable bool
}

// prepareAnthropic makes an Anthropic request byte-stable and places its
// markers: markers stripped, tools pinned, betas latched, hashes taken,
// then at most four markers placed (tools, the static system prefix, the
// last message, a bridge when the turn added more blocks than the
// lookback sees).
func (c *Cache) prepareAnthropic(ctx context.Context, cl *call, p *anthropic.MessageNewParams, req *models.Request) error {
	c.useParentPrefix(cl, p)
	ts := cl.ts
	ts.mu.Lock()
	save := false
	if ts.latches.TTL == "" && !cl.site.skipWrite {
		ttl := TTL5m
		if c.cfg.TTL != nil {
			ttl = c.cfg.TTL(ctx, ts.id)
		}
		if ttl != TTL1h {
			ttl = TTL5m
		}
		ts.latches.TTL, save = ttl, true
	}
	cl.staticTTL = ts.latches.TTL
	if cl.staticTTL == "" {
		cl.staticTTL = TTL5m
	}
	if latchBetas(ts, req, !cl.site.skipWrite) {
		save = true
	}
	auto := stripAnthropic(p)
	h := newHasher()
	var acc uint64
	for i := range p.Tools {
		def, name, pinned, err := c.pinAnthropicTool(ts, &p.Tools[i], !cl.site.skipWrite)
		if err != nil {
			ts.mu.Unlock()
			return err
		}
		if pinned == pinNew {
			save = true
		} else if pinned == pinReplaced {
			cl.pinned = append(cl.pinned, name)
		}
		h.tool(name, def, &acc)
	}
	h.h.Tools = hexOf(acc)
	var err error
	if save {
		err = c.saveLatches(ctx, ts)
	}
	ts.mu.Unlock()
	if err != nil {
		return err
	}

	boundary := -1
	acc = 0
	for i, b := range p.System {
		if b.CacheControl.Type != "" || b.CacheControl.TTL != "" {
			boundary = i
			b.CacheControl = anthropic.CacheControlEphemeralParam{}
			p.System[i] = b
		}
		s := xxh3.HashString(b.Text)
		h.h.SystemBlocks = append(h.h.SystemBlocks, hexOf(s))
		acc = mix(acc, s)
	}
	h.h.System = hexOf(acc)
	if boundary < 0 {
		boundary = len(p.System) - 1
	}
	// Messages: each block hashed, each message's hash chained onto the
	// prefix before it.
	positions := make([]blockPos, 0, 2*len(p.Messages))
	h.h.MessagesPrefix = make([]string, 0, len(p.Messages))
	acc = 0
	for mi := range p.Messages {
		role, content := messageContent(&p.Messages[mi])
		mh := xxh3.HashString(role)
		if content == nil {
			mh = mix(mh, xxh3.Hash(mustJSON(&p.Messages[mi]))) // a mid-conversation system message
		}
		for bi := range content {
			b := &content[bi]
			mh = mix(mh, blockHash(b))
			positions = append(positions, blockPos{msg: mi, blk: bi, cacheable: b.OfThinking == nil && b.OfRedactedThinking == nil})
		}
		acc = mix(acc, mh)
		h.h.MessagesPrefix = append(h.h.MessagesPrefix, hexOf(acc))
	}
	h.param(DimModel, string(p.Model))
	h.param(DimSpeed, string(p.Speed))
	h.param(DimCacheTTL, string(cl.staticTTL))
	h.param(DimGlobalCache, "org")
	h.param(DimBetas, req.Headers[betaHeader])
	if auto {
		h.paramBytes(DimAutoMode, mustJSON(p.CacheControl))
	} else {
		h.param(DimAutoMode, "")
	}
	h.param(DimOverage, "")
	h.param(DimCacheEditing, "")
	h.param(DimEffort, string(p.OutputConfig.Effort))
	extra := mustJSON(p.ExtraFields())
	if p.OutputConfig.Format.Schema != nil {
		extra = append(extra, mustJSON(p.OutputConfig.Format)...)
	}
	h.paramBytes(DimExtraBody, extra)
	h.paramBytes(DimToolChoice, mustJSON(p.ToolChoice))
	h.paramBytes(DimThinking, mustJSON(p.Thinking))
	cl.hashes = h.h
	cl.blockCount = len(p.Tools) + len(p.System) + len(positions)
	cl.promptBlocks = len(positions)

	c.findPrevious(ctx, cl)
	c.placeAnthropic(cl, p, positions, boundary, auto)
	c.captureSafe(cl, p, boundary)
	return nil
}

// placeAnthropic places the markers, in priority order while slots last:
// the last message (second-to-last for a fork that skips its write), the
// static system prefix, the tools, a bridge. A top-level automatic marker
// set by the caller stands for the last-message one; it is recorded
// with the others, so break detection knows where every call wrote.
//
// Distances are counted as the provider's 20-block lookback counts them:
// in content blocks (tools, system blocks, message blocks), the
// position of a marker being Marker.Block.
func (c *Cache) placeAnthropic(cl *call, p *anthropic.MessageNewParams, positions []blockPos, boundary int, auto bool) {
	slots := 4
	if auto {
		slots-- // the automatic marker takes one, and marks the last block itself
	}
	// offset is the content-block index of the first message block.
	offset := len(p.Tools) + len(p.System)
	lastWritten := -1
	if cl.prev != nil {
		lastWritten = lastWrittenBlock(cl.prev, offset)
	}
	cl.lastWritten = lastWritten
	target := len(positions) - 1
	if cl.site.skipWrite && len(p.Messages) >= 2 {
		// The last block of the second-to-last message.
		for target >= 0 && positions[target].msg == len(p.Messages)-1 {
			target--
		}
	}
	for target >= 0 && !positions[target].cacheable {
		target--
	}
	if lastWritten >= 0 {
		cl.sinceWrite = max(offset+len(positions)-1-lastWritten, 0)
	}
	var marks []Marker
	msgTTL := TTL5m
	msgMarker := func(i int, ttl TTL) Marker {
		pos := positions[i]
		return Marker{At: fmt.Sprintf("messages[%d].content[%d]", pos.msg, pos.blk), TTL: ttl, MessageBlock: i, Block: offset + i}
	}
	if !auto && target >= 0 && slots > 0 {
		pos := positions[target]
		_, content := messageContent(&p.Messages[pos.msg])
		*content[pos.blk].GetCacheControl() = cacheControl(msgTTL)
		marks = append(marks, msgMarker(target, msgTTL))
		slots--
	}
	if boundary >= 0 && slots > 0 {
		p.System[boundary].CacheControl = cacheControl(cl.staticTTL)
		marks = append(marks, Marker{At: fmt.Sprintf("system[%d]", boundary), TTL: cl.staticTTL, MessageBlock: -1, Block: len(p.Tools) + boundary})
		slots--
	}
	if n := len(p.Tools); n > 0 && slots > 0 {
		if cc := p.Tools[n-1].GetCacheControl(); cc != nil {
			*cc = cacheControl(cl.staticTTL)
			marks = append(marks, Marker{At: fmt.Sprintf("tools[%d]", n-1), TTL: cl.staticTTL, MessageBlock: -1, Block: n - 1})
			slots--
		}
	}
	// The automatic marker lands on the last block that may carry one
	// (the provider walks back past thinking blocks), the last message
	// block whatever the fork; without messages, on the last system
	// block or tool.
	autoAt := -1
	if auto {
		autoAt = len(positions) - 1
		for autoAt >= 0 && !positions[autoAt].cacheable {
			autoAt--
		}
		if autoAt >= 0 {
			target = autoAt
		}
	}
	// R2: a second message marker only when the turn added more blocks
	// than the lookback of the last marker reaches back to the previous
	// entry.
	if !c.cfg.NoBridge && lastWritten >= 0 && target >= 0 && offset+target-lastWritten > bridgeAfter && slots > 0 {
		b := lastWritten + bridgeAfter - offset
		for b >= 0 && offset+b > lastWritten && !positions[b].cacheable {
			b--
		}
		if b >= 0 && offset+b > lastWritten {
			pos := positions[b]
			_, content := messageContent(&p.Messages[pos.msg])
			*content[pos.blk].GetCacheControl() = cacheControl(msgTTL)
			marks = append(marks, msgMarker(b, msgTTL))
		}
	}
	if auto {
		marks = append(marks, c.autoMarker(p, marks, positions, autoAt, offset))
	}
	// Report them in prefix order: tools, system, messages.
	slices.SortStableFunc(marks, func(a, b Marker) int { return a.Block - b.Block })
	cl.markers = marks
}

// autoMarker is the caller's top-level automatic marker as placed: on the
// message block autoAt (else the last system block, else the last tool).
//
// 1-hour entries must come before 5-minute ones (reference §1.2), and the
// automatic marker is the last of all. When the caller asks for a 1h one
// after a 5m marker of the layer's (the static prefix under a 5m thread
// TTL, or a bridge), the automatic marker is downgraded to 5m rather than
// the earlier markers upgraded: the static prefix's TTL is latched per
// thread (R4), and flipping it mid-thread would change the marker bytes
// and bust every tier; message entries are 5m anyway.
func (c *Cache) autoMarker(p *anthropic.MessageNewParams, placed []Marker, positions []blockPos, autoAt, offset int) Marker {
	ttl := TTL5m
	if p.CacheControl.TTL == anthropic.CacheControlEphemeralTTLTTL1h {
		ttl = TTL1h
	}
	for _, m := range placed {
		if ttl == TTL1h && m.TTL != TTL1h {
			ttl = TTL5m
			p.CacheControl.TTL = anthropic.CacheControlEphemeralTTL(TTL5m)
		}
	}
	m := Marker{TTL: ttl, Auto: true, MessageBlock: -1}
	switch {
	case autoAt >= 0:
		pos := positions[autoAt]
		m.At, m.MessageBlock, m.Block = fmt.Sprintf("messages[%d].content[%d]", pos.msg, pos.blk), autoAt, offset+autoAt
	case len(p.System) > 0:
		m.At, m.Block = fmt.Sprintf("system[%d]", len(p.System)-1), offset-1
	case len(p.Tools) > 0:
		m.At, m.Block = fmt.Sprintf("tools[%d]", len(p.Tools)-1), len(p.Tools)-1
	}
	return m
}

// lastWrittenBlock is the content-block index, in a request whose message
// blocks start at offset, of the last position the previous call wrote:
// its last marker. A message marker is placed by its message block, so a
// record written before Marker.Block existed still counts right.
func lastWrittenBlock(prev *Record, offset int) int {
	last := -1
	for _, m := range prev.Markers {
		b := m.Block
		if m.MessageBlock >= 0 {
			b = offset + m.MessageBlock
		}
		last = max(last, b)
	}
	return last
}

func cacheControl(ttl TTL) anthropic.CacheControlEphemeralParam {
	cc := anthropic.NewCacheControlEphemeralParam()
	cc.TTL = anthropic.CacheControlEphemeralTTL(ttl)
	return cc
}

// stripAnthropic removes every cache_control marker below the top level
// (the layer places its own) and reports whether the top-level automatic
// marker is set. System blocks keep theirs: a marked system block is the
// static/dynamic boundary (System marks it), read and cleared by the
// caller.
func stripAnthropic(p *anthropic.MessageNewParams) (auto bool) {
	for i := range p.Tools {
		if cc := p.Tools[i].GetCacheControl(); cc != nil {
			*cc = anthropic.CacheControlEphemeralParam{}
		}
	}
	for mi := range p.Messages {
		_, content := messageContent(&p.Messages[mi])
		for bi := range content {
			b := &content[bi]
			if cc := b.GetCacheControl(); cc != nil {
				*cc = anthropic.CacheControlEphemeralParam{}
			}
			if r := b.OfToolResult; r != nil {
				for ci := range r.Content {
					if cc := r.Content[ci].GetCacheControl(); cc != nil {
						*cc = anthropic.CacheControlEphemeralParam{}
					}
				}
			}
		}
	}
	return p.CacheControl.Type != "" || p.CacheControl.TTL != ""
}

// blockHash hashes a message content block from its fields, without
// encoding it: the common blocks (text, tool use, tool result, thinking)
// directly, any other by its JSON (markers already stripped).
func blockHash(b *anthropic.ContentBlockParamUnion) uint64 {
	switch {
	case b.OfText != nil && len(b.OfText.Citations) == 0:
		return mix(1, xxh3.HashString(b.OfText.Text))
	case b.OfToolUse != nil:
		u := b.OfToolUse
		return mix(mix(2, xxh3.HashString(u.ID+"\x00"+u.Name)), xxh3.Hash(mustJSON(u.Input)))
	case b.OfToolResult != nil:
		r := b.OfToolResult
		h := mix(3, xxh3.HashString(r.ToolUseID))
		if r.IsError.Valid() && r.IsError.Value {
			h = mix(h, 1)
		}
		for i := range r.Content {
			cu := &r.Content[i]
			if t := cu.OfText; t != nil && len(t.Citations) == 0 {
				h = mix(h, xxh3.HashString(t.Text))
			} else {
				h = mix(h, xxh3.Hash(mustJSON(cu)))
			}
		}
		return h
	case b.OfThinking != nil:
		return mix(4, xxh3.HashString(b.OfThinking.Thinking+"\x00"+b.OfThinking.Signature))
	}
	return mix(5, xxh3.Hash(mustJSON(b)))
}

// Pinning outcomes.
const (
	pinKept     = iota // the tool's definition is its pinned one
	pinNew             // first seen: pinned now
	pinReplaced        // drifted: the pinned definition was sent instead
)

// pinAnthropicTool sends a custom tool as the thread first rendered it
// (R6), byte for byte: a drifted description or schema is replaced by the
// pinned definition until Reset. Server tools are hashed, not pinned.
// ts.mu is held.
func (c *Cache) pinAnthropicTool(ts *threadState, t *anthropic.ToolUnionParam, latch bool) (def []byte, name string, outcome int, err error) {
	def, err = json.Marshal(t)
	if err != nil {
		return nil, "", 0, fmt.Errorf("promptcache: encoding a tool: %w", err)
	}
	if n := t.GetName(); n != nil {
		name = *n
	}
	if t.OfTool == nil || ts.id == "" {
		return def, name, pinKept, nil
	}
	pinned, tool, outcome, err := pinTool[anthropic.ToolParam](ts, "anthropic/"+name, def, latch)
	if err != nil || tool == nil {
		return def, name, outcome, err
	}
	t.OfTool = tool
	return pinned, name, outcome, nil
}

// pinTool is the pinning every provider's tools share (R6). key names
// the tool in the thread's latches and def is its definition as rendered
// now: the first definition seen is pinned (when latch says so), and a
// later one that differs is replaced by the pinned one, decoded into the
// provider's tool type T (and kept decoded for the thread). It returns
// the bytes to hash and, on a replacement, the tool value to send.
// ts.mu is held.
func pinTool[T any](ts *threadState, key string, def []byte, latch bool) (sent []byte, tool *T, outcome int, err error) {
	pinned, ok := ts.latches.Tools[key]
	switch {
	case !ok && latch:
		if ts.latches.Tools == nil {
			ts.latches.Tools = map[string]string{}
		}
		ts.latches.Tools[key] = string(def)
		return def, nil, pinNew, nil
	case !ok || pinned == string(def):
		return def, nil, pinKept, nil
	}
	cached, ok := ts.tools[key].(T)
	if !ok {
		if err := json.Unmarshal([]byte(pinned), &cached); err != nil {
			return nil, nil, 0, fmt.Errorf("promptcache: the pinned definition of tool %q: %w", key, err)
		}
		if ts.tools == nil {
			ts.tools = map[string]any{}
		}
		ts.tools[key] = cached
	}
	return []byte(pinned), &cached, pinReplaced, nil
}

// latchBetas sends the union of the thread's latched beta flags and the
// request's (R12: once on, a flag stays on until Reset); latch says
// whether new flags join the latch. It reports whether the latch grew.
// ts.mu is held.
func latchBetas(ts *threadState, req *models.Request, latch bool) bool {
	var asked []string
	for _, f := range strings.Split(req.Headers[betaHeader], ",") {
		if f = strings.TrimSpace(f); f != "" {
			asked = append(asked, f)
		}
	}
	set := slices.Clone(ts.latches.Betas)
	grew := false
	for _, f := range asked {
		if !slices.Contains(set, f) {
			set = append(set, f)
			grew = true
		}
	}
	slices.Sort(set)
	if grew && latch && ts.id != "" {
		ts.latches.Betas = set
	} else {
		grew = false
	}
	if len(set) > 0 {
		if req.Headers == nil {
			req.Headers = map[string]string{}
		}
		req.Headers[betaHeader] = strings.Join(set, ",")
	}
	return grew
}

// mustJSON encodes v, or gives its %v form when it cannot be encoded
// (the hash then still changes when v does).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprintf("%#v", v))
	}
	return b
}

// messageContent is a message's role and blocks (the slice shares the
// message's, so a marker set through it is sent).
func messageContent(m *anthropic.MessageParam) (string, []anthropic.ContentBlockParamUnion) {
	switch {
	case m.OfUser != nil:
		return "user", m.OfUser.Content
	case m.OfAssistant != nil:
		return "assistant", m.OfAssistant.Content
	}
	return "other", nil
}

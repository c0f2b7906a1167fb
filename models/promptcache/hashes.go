package promptcache

import (
	"encoding/binary"
	"encoding/hex"
	"slices"

	"github.com/zeebo/xxh3"
)

// Dimension is one thing whose change breaks the cache: the twelve of
// §5 R11, then three more the tier table of §1.3 names.
type Dimension string

// The dimensions, in the order breaks report them.
const (
	DimSystem       Dimension = "system"        // system text, markers stripped
	DimTools        Dimension = "tools"         // tool schemas, hashed per tool
	DimModel        Dimension = "model"         //
	DimSpeed        Dimension = "speed"         // fast/speed mode
	DimCacheTTL     Dimension = "cache_ttl"     // cache-control scope and TTL
	DimGlobalCache  Dimension = "global_cache"  // global-cache strategy; OpenAI's prompt_cache_key
	DimBetas        Dimension = "betas"         // the beta-header list
	DimAutoMode     Dimension = "auto_mode"     // the top-level (automatic) cache_control
	DimOverage      Dimension = "overage"       // overage state (no public API reports it: always empty today)
	DimCacheEditing Dimension = "cache_editing" // the cache-editing toggle (not in the public API: always empty today)
	DimEffort       Dimension = "effort"        //
	DimExtraBody    Dimension = "extra_body"    // extra body params
	DimToolChoice   Dimension = "tool_choice"   // keeps the tools and system tiers
	DimThinking     Dimension = "thinking"      // the thinking config
	DimMessages     Dimension = "messages"      // an earlier message changed (history edited or compacted)
)

// dimensionOrder lists the scalar dimensions kept in Hashes.Params.
var dimensionOrder = []Dimension{DimSystem, DimTools, DimModel, DimSpeed, DimCacheTTL, DimGlobalCache, DimBetas, DimAutoMode, DimOverage, DimCacheEditing, DimEffort, DimExtraBody, DimToolChoice, DimThinking, DimMessages}

// Hashes are a request's hashes, markers stripped: what break detection
// compares between calls of one lineage.
type Hashes struct {
	// Tools hashes every tool definition in order; ToolsEach each one by
	// name, ToolOrder the names in order.
	Tools     string            `json:"tools"`
	ToolsEach map[string]string `json:"tools_each"`
	ToolOrder []string          `json:"tool_order"`
	// System hashes the system blocks in order; SystemBlocks each one.
	System       string   `json:"system"`
	SystemBlocks []string `json:"system_blocks"`
	// MessagesPrefix[i] hashes messages 0..i.
	MessagesPrefix []string `json:"messages_prefix"`
	// Params hashes the other dimensions by name.
	Params map[Dimension]string `json:"params"`
}

// hasher accumulates hashes as a request is walked.
type hasher struct{ h Hashes }

func newHasher() *hasher {
	return &hasher{h: Hashes{ToolsEach: map[string]string{}, Params: map[Dimension]string{}}}
}

func hexOf(u uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], u)
	return hex.EncodeToString(b[:])
}

func mix(a, b uint64) uint64 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], a)
	binary.LittleEndian.PutUint64(buf[8:], b)
	return xxh3.Hash(buf[:])
}

func (h *hasher) tool(name string, def []byte, acc *uint64) {
	t := xxh3.Hash(def)
	h.h.ToolsEach[name] = hexOf(t)
	h.h.ToolOrder = append(h.h.ToolOrder, name)
	*acc = mix(*acc, t)
}

func (h *hasher) param(d Dimension, s string) { h.h.Params[d] = hexOf(xxh3.HashString(s)) }

func (h *hasher) paramBytes(d Dimension, b []byte) { h.h.Params[d] = hexOf(xxh3.Hash(b)) }

// diff names what changed between two calls' hashes, in dimensionOrder.
func diff(prev, cur *Hashes) (dims []Dimension, tools []string, system []int) {
	changed := map[Dimension]bool{}
	if prev.Tools != cur.Tools {
		changed[DimTools] = true
		tools = changedTools(prev, cur)
	}
	if prev.System != cur.System {
		changed[DimSystem] = true
		for i := range max(len(prev.SystemBlocks), len(cur.SystemBlocks)) {
			if i >= len(prev.SystemBlocks) || i >= len(cur.SystemBlocks) || prev.SystemBlocks[i] != cur.SystemBlocks[i] {
				system = append(system, i)
			}
		}
	}
	for d, v := range cur.Params {
		if prev.Params[d] != v {
			changed[d] = true
		}
	}
	for d := range prev.Params {
		if _, ok := cur.Params[d]; !ok {
			changed[d] = true
		}
	}
	if n := len(prev.MessagesPrefix); n > 0 {
		if len(cur.MessagesPrefix) < n || cur.MessagesPrefix[n-1] != prev.MessagesPrefix[n-1] {
			changed[DimMessages] = true
		}
	}
	for _, d := range dimensionOrder {
		if changed[d] {
			dims = append(dims, d)
		}
	}
	return dims, tools, system
}

// changedTools names the tools added, removed, changed or moved.
func changedTools(prev, cur *Hashes) []string {
	var out []string
	pos := func(l []string, n string) int { return slices.Index(l, n) }
	for i, n := range cur.ToolOrder {
		if prev.ToolsEach[n] != cur.ToolsEach[n] || pos(prev.ToolOrder, n) != i {
			out = append(out, n)
		}
	}
	for _, n := range prev.ToolOrder {
		if _, ok := cur.ToolsEach[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

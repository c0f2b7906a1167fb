package promptcache

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/zeebo/xxh3"
)

// PromptCacheKey is the prompt_cache_key of a thread's OpenAI requests: a
// hash of the thread id, so requests of one thread are routed to the same
// cache and the id itself is not sent. Above ~15 requests a minute for
// one prefix and key, OpenAI spills requests onto other machines; a
// thread that busy would shard the key ("<key>-<n>"), which this layer
// does not do.
func PromptCacheKey(thread string) string {
	h := xxh3.HashString128("superstep/" + thread).Bytes()
	return fmt.Sprintf("ss-%x", h[:12])
}

// prepareOpenAI makes an OpenAI-compatible request byte-stable: the
// thread's prompt_cache_key, tools pinned, hashes taken. The cache is
// implicit (no markers); break detection reads cached_tokens.
func (c *Cache) prepareOpenAI(ctx context.Context, cl *call, p *openai.ChatCompletionNewParams) error {
	ts := cl.ts
	if ts.id != "" && !p.PromptCacheKey.Valid() {
		p.PromptCacheKey = openai.String(PromptCacheKey(ts.id))
	}
	h := newHasher()
	var acc uint64
	ts.mu.Lock()
	save := false
	for i := range p.Tools {
		def, name, outcome, err := pinOpenAITool(ts, &p.Tools[i], !cl.site.skipWrite)
		if err != nil {
			ts.mu.Unlock()
			return err
		}
		switch outcome {
		case pinNew:
			save = true
		case pinReplaced:
			cl.pinned = append(cl.pinned, name)
		}
		h.tool(name, def, &acc)
	}
	var err error
	if save {
		err = c.saveLatches(ctx, ts)
	}
	ts.mu.Unlock()
	if err != nil {
		return err
	}
	h.h.Tools = hexOf(acc)
	acc = 0
	var sys uint64
	h.h.MessagesPrefix = make([]string, 0, len(p.Messages))
	for i := range p.Messages {
		m := &p.Messages[i]
		var mh uint64
		switch {
		case m.OfSystem != nil && m.OfSystem.Content.OfString.Valid():
			mh = mix(1, xxh3.HashString(m.OfSystem.Content.OfString.Value))
		case m.OfUser != nil && m.OfUser.Content.OfString.Valid():
			mh = mix(2, xxh3.HashString(m.OfUser.Content.OfString.Value))
		case m.OfTool != nil && m.OfTool.Content.OfString.Valid():
			mh = mix(mix(3, xxh3.HashString(m.OfTool.ToolCallID)), xxh3.HashString(m.OfTool.Content.OfString.Value))
		default:
			mh = mix(4, xxh3.Hash(mustJSON(m)))
		}
		if m.OfSystem != nil || m.OfDeveloper != nil {
			h.h.SystemBlocks = append(h.h.SystemBlocks, hexOf(mh))
			sys = mix(sys, mh)
		}
		acc = mix(acc, mh)
		h.h.MessagesPrefix = append(h.h.MessagesPrefix, hexOf(acc))
	}
	h.h.System = hexOf(sys)
	h.param(DimModel, p.Model)
	h.param(DimSpeed, "")
	h.paramBytes(DimCacheTTL, append(mustJSON(p.PromptCacheRetention), mustJSON(p.PromptCacheOptions)...))
	h.param(DimGlobalCache, p.PromptCacheKey.Value)
	h.param(DimBetas, "")
	h.param(DimAutoMode, "")
	h.param(DimOverage, "")
	h.param(DimCacheEditing, "")
	h.param(DimEffort, string(p.ReasoningEffort))
	h.paramBytes(DimExtraBody, append(mustJSON(p.ExtraFields()), mustJSON(p.ResponseFormat)...))
	h.paramBytes(DimToolChoice, mustJSON(p.ToolChoice))
	h.param(DimThinking, "")
	cl.hashes = h.h
	cl.blockCount = len(p.Tools) + len(p.Messages)
	cl.promptBlocks = len(p.Messages)
	c.findPrevious(ctx, cl)
	if cl.prev != nil {
		cl.sinceWrite = len(p.Messages) - len(cl.prev.Hashes.MessagesPrefix)
	}
	return nil
}

// pinOpenAITool is pinAnthropicTool for function tools. ts.mu is held.
func pinOpenAITool(ts *threadState, t *openai.ChatCompletionToolUnionParam, latch bool) (def []byte, name string, outcome int, err error) {
	def, err = json.Marshal(t)
	if err != nil {
		return nil, "", 0, fmt.Errorf("promptcache: encoding a tool: %w", err)
	}
	if t.OfFunction == nil {
		return def, "", pinKept, nil
	}
	name = t.OfFunction.Function.Name
	if ts.id == "" {
		return def, name, pinKept, nil
	}
	pinned, tool, outcome, err := pinTool[openai.ChatCompletionFunctionToolParam](ts, "openai/"+name, def, latch)
	if err != nil || tool == nil {
		return def, name, outcome, err
	}
	t.OfFunction = tool
	return pinned, name, outcome, nil
}

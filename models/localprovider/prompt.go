package localprovider

import (
	"bytes"
	"encoding/json"
	"time"
)

// prompt is a request canonicalised into the ordered blocks a provider's
// prompt cache keys on (reference §6.4): for Anthropic tools, the
// ⟨speed, web search, citations⟩ tier, system blocks, the ⟨tool_choice,
// thinking/effort, images⟩ tier, then message blocks; for OpenAI tools
// then messages. Usage is computed from a prompt alone, by promptUsage,
// and responseStarted makes its cache writes visible.
type prompt struct {
	api   API
	key   string // fingerprint of the API key: caches are isolated per key
	model string
	// start is the double's clock when the request arrived: cache lookups
	// are made at that time and entries expire a TTL after it.
	start time.Time
	// blocks in prefix order.
	blocks []promptBlock
	// marker is the request's top-level (automatic) cache_control, if any.
	marker *CacheControl
	// route and retention are OpenAI's prompt_cache_key and
	// prompt_cache_retention.
	route, retention string
	// plan is what the cache decided for this request, filled by
	// promptUsage and carried out by responseStarted.
	plan *cachePlan
}

// promptBlock is one block of the prefix.
type promptBlock struct {
	// kind is "tool", "system" or "message", or "tier" for the
	// pseudo-blocks that stand for request parameters; tiers count no
	// tokens.
	kind string
	// role is a message block's role, folded into the block's key.
	role string
	// bytes is the block's canonical JSON: as the client sent it, compact,
	// without its cache_control (a marker does not change the prefix).
	// Tokens are estimated from it.
	bytes []byte
	// marker is the block's cache_control, if any.
	marker *CacheControl
	// eligible is whether the automatic marker may land here (not a tier,
	// not a thinking block).
	eligible bool
}

// canonicalBlock is a block's canonical bytes: its JSON object compacted,
// keys in the order sent, without a top-level cache_control; a JSON string
// (content given as a string) is the text block it stands for.
func canonicalBlock(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var b bytes.Buffer
		b.WriteString(`{"type":"text","text":`)
		_ = json.Compact(&b, raw)
		b.WriteByte('}')
		raw = b.Bytes()
	}
	var out bytes.Buffer
	out.WriteByte('{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			out.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		out.Write(kb)
		out.WriteByte(':')
		_ = json.Compact(&out, v)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		// Not an object: keep it as it is, compacted.
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			return append([]byte(nil), raw...)
		}
		return b.Bytes()
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		if k != "cache_control" {
			member(k, v)
		}
	}
	out.WriteByte('}')
	return out.Bytes()
}

// tierBlock is a pseudo-block holding request parameters in prefix order.
func tierBlock(fields map[string]any) promptBlock {
	b, _ := json.Marshal(fields) // map keys sort: stable bytes
	return promptBlock{kind: "tier", bytes: b}
}

// exchange is what the offline model reads of a request, whichever API.
type exchange struct {
	// lastUser is the text of the last user message.
	lastUser string
	// toolResults holds the tool results of the last message, when the
	// conversation ends with them.
	toolResults []string
	tools       []offeredTool
}

// offeredTool is a tool the request offers the model.
type offeredTool struct {
	name   string
	schema json.RawMessage
}

// cumulativeTokens is the estimated tokens of blocks[0..i] for each i.
func (s *Server) cumulativeTokens(p prompt) []int {
	cum := make([]int, len(p.blocks))
	n := 0
	for i, b := range p.blocks {
		if b.kind != "tier" {
			n += s.tokens(b.bytes)
		}
		cum[i] = n
	}
	return cum
}

// promptTokens is the estimated input tokens of a prompt, cached or not:
// what count_tokens answers.
func (s *Server) promptTokens(p prompt) int {
	if cum := s.cumulativeTokens(p); len(cum) > 0 {
		return cum[len(cum)-1]
	}
	return 0
}

// promptUsage is the one function that computes a request's input usage.
// With the prompt cache on it looks the prompt up and plans its writes
// (p.plan), which responseStarted carries out; otherwise every prompt
// token is uncached input.
func (s *Server) promptUsage(p prompt) Usage {
	if s.cache == nil || p.plan == nil {
		return Usage{InputTokens: s.promptTokens(p)}
	}
	if p.api == OpenAI {
		return s.cache.planOpenAI(p, s.cumulativeTokens(p), s.minTokens(p.model))
	}
	return s.cache.planAnthropic(p, s.cumulativeTokens(p), s.minTokens(p.model))
}

// responseStarted is called when a response's first event (message_start,
// the first chunk, or a JSON body) is about to be written: this request's
// cache writes and refreshes take effect, so requests arriving from now on
// read them. A request answered with an error never gets here and writes
// nothing.
func (s *Server) responseStarted(p prompt) {
	if s.cache != nil && p.plan != nil {
		s.cache.commit(p)
	}
}

// outputTokens estimates the output tokens of a reply.
func (s *Server) outputTokens(text string, calls []ToolCall) int {
	n := s.tokens([]byte(text))
	for _, c := range calls {
		n += s.tokens([]byte(c.Name)) + s.tokens([]byte(c.Args))
	}
	return max(n, 1)
}

package localprovider

import "encoding/json"

// prompt is a request canonicalised into the ordered blocks a provider's
// prompt cache keys on: tools, then system, then message blocks. It is the
// seam for the caching emulation (reference §6.4): usage is computed from a
// prompt alone, by promptUsage, and responseStarted marks the point where a
// response has begun (where a cache entry becomes visible to others).
type prompt struct {
	api   API
	key   string // fingerprint of the API key: caches are isolated per key
	model string
	// blocks in prefix order.
	blocks []promptBlock
	// marker is the request's top-level (automatic) cache_control, if any.
	marker *CacheControl
}

// promptBlock is one block of the prefix.
type promptBlock struct {
	kind string // "tool", "system" or "message"
	role string // for messages
	// raw is the block's JSON as the client sent it.
	raw json.RawMessage
	// marker is the block's cache_control, if any.
	marker *CacheControl
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

// promptUsage is the one function that computes a request's input usage.
// Without the caching emulation, every prompt token is uncached input.
func (s *Server) promptUsage(p prompt) Usage {
	n := 0
	for _, b := range p.blocks {
		n += s.tokens(b.raw)
	}
	return Usage{InputTokens: n}
}

// responseStarted is called when a response's first event (message_start,
// the first chunk, or a JSON body) is about to be written. The caching
// emulation will make this request's cache writes readable here.
func (s *Server) responseStarted(prompt) {}

// outputTokens estimates the output tokens of a reply.
func (s *Server) outputTokens(text string, calls []ToolCall) int {
	n := s.tokens([]byte(text))
	for _, c := range calls {
		n += s.tokens([]byte(c.Name)) + s.tokens([]byte(c.Args))
	}
	return max(n, 1)
}

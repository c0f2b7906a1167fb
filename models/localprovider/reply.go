package localprovider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// reply is a Turn made ready to send: ids given, text and arguments split
// into the fragments a stream sends, usage computed.
type reply struct {
	chunks   []string
	thinking string
	after    string // text block after the tool calls
	calls    []ToolCall
	stop     string // provider's word; empty derives it
	usage    Usage
	fault    Fault
}

// text is the reply's whole text.
func (r reply) text() string { return strings.Join(r.chunks, "") }

// prepare turns a scripted (or offline) turn into a reply for request seq.
func (s *Server) prepare(t Turn, p prompt, seq int, idPrefix string) reply {
	r := reply{chunks: t.Chunks, stop: t.StopReason, thinking: t.Thinking, after: t.TextAfterTools}
	if len(r.chunks) == 0 && t.Text != "" {
		r.chunks = []string{t.Text}
	}
	for i, c := range t.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("%s%06d_%d", idPrefix, seq, i)
		}
		if len(c.ArgChunks) > 0 {
			c.Args = strings.Join(c.ArgChunks, "")
		}
		if c.Args == "" {
			c.Args = "{}"
		}
		if len(c.ArgChunks) == 0 {
			half := len(c.Args) / 2
			c.ArgChunks = []string{c.Args[:half], c.Args[half:]}
			if half == 0 {
				c.ArgChunks = []string{c.Args}
			}
		}
		r.calls = append(r.calls, c)
	}
	if t.Fault != nil {
		r.fault = *t.Fault
	}
	// The cache is looked up (and its writes planned) even when the turn
	// scripts its usage: the request still reads and writes entries.
	r.usage = s.promptUsage(p)
	r.usage.OutputTokens = s.outputTokens(r.text(), r.calls)
	if t.Usage != nil {
		r.usage = *t.Usage
	}
	return r
}

// turnFor is the scripted turn for the request's key, else the
// responder's answer (Config.Respond), else the offline model's.
func (s *Server) turnFor(req Request, x exchange) Turn {
	if t, ok := s.next(req.Key); ok {
		return t
	}
	if s.respond != nil {
		if t, ok := s.respond(req); ok {
			return t
		}
	}
	return offlineTurn(x)
}

// hold waits out a fault's first-byte delay on the double's clock. It
// reports false when the client went away first: nothing is to be sent.
func (s *Server) hold(r *http.Request, f Fault) bool {
	if f.FirstByteDelay <= 0 {
		return r.Context().Err() == nil
	}
	select {
	case <-s.clock.After(f.FirstByteDelay):
		return true
	case <-r.Context().Done():
		return false
	}
}

// dropConnection ends the exchange abruptly: net/http closes the
// connection without finishing the response.
func dropConnection(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

// validJSON reports whether s is one JSON value.
func validJSON(s string) bool { return json.Valid([]byte(s)) }

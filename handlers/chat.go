package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/internal/textcut"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// Chat view limits: a message's text (and a tool call's arguments) is
// cut to ChatTextBytes, the rest fetched on demand like a value's; a
// chat shows its latest ChatMaxMessages messages.
const (
	ChatTextBytes   = ValuePreviewBytes
	ChatMaxMessages = 200
	// maxOriginSteps bounds the walk up a lineage looking for where a
	// message first appeared.
	maxOriginSteps = 1000
)

// chatTypes are the "type"s of LangChain messages a chat shows.
var chatTypes = []string{models.TypeHuman, models.TypeAI, models.TypeAIChunk, models.TypeTool, models.TypeSystem}

// decodeMessages reads a state value as a list of LangChain messages; ok
// is false when it is not one (not a list, empty, or an element that is
// not an object with a chat "type").
func decodeMessages(v any) (msgs []models.Message, ok bool) {
	if ms, isMsgs := v.([]models.Message); isMsgs {
		if len(ms) == 0 {
			return nil, false
		}
		for _, m := range ms {
			if !slices.Contains(chatTypes, m.Type) {
				return nil, false
			}
		}
		return ms, true
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) == 0 || b[0] != '[' {
		return nil, false
	}
	var raws []json.RawMessage
	if json.Unmarshal(b, &raws) != nil || len(raws) == 0 {
		return nil, false
	}
	msgs = make([]models.Message, 0, len(raws))
	for _, raw := range raws {
		var head struct {
			Type string `json:"type"`
		}
		if len(bytes.TrimSpace(raw)) == 0 || raw[0] != '{' || json.Unmarshal(raw, &head) != nil || !slices.Contains(chatTypes, head.Type) {
			return nil, false
		}
		var m models.Message
		if json.Unmarshal(raw, &m) != nil {
			return nil, false
		}
		msgs = append(msgs, m)
	}
	return msgs, true
}

// ChatViews is the chat view of every state key of values holding
// messages (see decodeMessages), sorted by key, as read at checkpoint
// ckpt of thread. It is the one function behind the thread page's chat,
// its live refresh (ChatFragment) and a reload, so they cannot disagree.
func ChatViews(thread, ckpt string, values map[string]any) []web.ChatView {
	var out []web.ChatView
	for key, v := range values {
		msgs, ok := decodeMessages(v)
		if !ok {
			continue
		}
		out = append(out, chatView(thread, ckpt, key, msgs))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// chatView folds one key's messages: each tool message that answers a
// tool call of an earlier AI message goes under that call; the others
// stay in order.
func chatView(thread, ckpt, key string, msgs []models.Message) web.ChatView {
	v := web.ChatView{Key: key, Checkpoint: ckpt, ValueURL: ckptPath(url.PathEscape(thread), url.PathEscape(ckpt)) + "/values/" + url.PathEscape(key)}
	first := max(0, len(msgs)-ChatMaxMessages)
	v.Earlier = first
	// calls locates each tool call shown: message index in v.Messages
	// and call index.
	type at struct{ msg, call int }
	calls := map[string]at{}
	for _, m := range msgs[first:] {
		cm := chatMessage(thread, ckpt, key, m)
		if m.Type == models.TypeTool && m.ToolCallID != "" {
			if a, ok := calls[m.ToolCallID]; ok && v.Messages[a.msg].ToolCalls[a.call].Result == nil {
				v.Messages[a.msg].ToolCalls[a.call].Result = &cm
				continue
			}
		}
		v.Messages = append(v.Messages, cm)
		for i, c := range cm.ToolCalls {
			if c.ID != "" {
				calls[c.ID] = at{len(v.Messages) - 1, i}
			}
		}
	}
	return v
}

// chatMessage is one message's view: its text cut to ChatTextBytes, the
// kinds of its non-text blocks, its tool calls with their arguments, its
// usage and the links that edit it and fork from it.
func chatMessage(thread, ckpt, key string, m models.Message) web.ChatMessage {
	typ := m.Type
	if typ == models.TypeAIChunk {
		typ = models.TypeAI
	}
	cm := web.ChatMessage{ID: m.ID, Type: typ, Name: m.Name, Status: m.Status}
	text := m.Text()
	cm.Size = len(text)
	if len(text) > ChatTextBytes {
		text, cm.Truncated = string(textcut.Cut([]byte(text), ChatTextBytes)), true
	}
	cm.Text = text
	for _, b := range m.Content.Blocks {
		if t := b.Type(); t != "text" && t != "tool_use" {
			cm.Blocks = append(cm.Blocks, t)
		}
	}
	if m.ID != "" {
		tid, kid, mid := url.PathEscape(thread), url.PathEscape(key), url.PathEscape(m.ID)
		if cm.Truncated {
			cm.TextURL = ckptPath(tid, url.PathEscape(ckpt)) + "/messages/" + kid + "/" + mid
		}
		cm.EditURL = ckptPath(tid, url.PathEscape(ckpt)) + "?" + url.Values{"edit": {key}, "message": {m.ID}}.Encode() + "#edit-state"
		cm.ForkURL = "/threads/" + tid + "/messages/" + kid + "/" + mid + "/origin"
	}
	for _, c := range m.ToolCalls {
		args, cut := argsText(c.Args)
		cm.ToolCalls = append(cm.ToolCalls, web.ChatToolCall{ID: c.ID, Name: c.Name, Args: args, ArgsTruncated: cut})
	}
	for _, c := range m.InvalidToolCalls {
		args := c.Args
		cut := len(args) > ChatTextBytes
		if cut {
			args = string(textcut.Cut([]byte(args), ChatTextBytes))
		}
		cm.ToolCalls = append(cm.ToolCalls, web.ChatToolCall{ID: c.ID, Name: c.Name, Args: args, ArgsTruncated: cut, Invalid: c.Error})
	}
	if u := m.Usage; u != nil {
		cu := &web.ChatUsage{Input: u.InputTokens, Output: u.OutputTokens}
		if d := u.InputTokenDetails; d != nil && d.CacheRead != nil {
			cu.CacheRead, cu.HasCacheRead = *d.CacheRead, true
		}
		cm.Usage = cu
	}
	if off, _ := m.ResponseMetadata["offline"].(bool); off {
		cm.Offline = true
	}
	return cm
}

// argsText is a tool call's arguments as one line of JSON, cut to
// ChatTextBytes.
func argsText(args map[string]any) (string, bool) {
	if args == nil {
		args = map[string]any{}
	}
	s := encodeJSON(args, false)
	if len(s) > ChatTextBytes {
		return textcut.Cut(s, ChatTextBytes), true
	}
	return s, false
}

// ChatStreams are the replies still streaming in a thread's catch-up
// (its message_chunk events), for the page to show as it renders.
func ChatStreams(evs []runs.Event) []web.ChatStream {
	var out []web.ChatStream
	for _, ev := range evs {
		if ev.Kind == runs.KindMessageChunk {
			node := ev.Node
			if ev.Path != "" {
				node = ev.Path + ":" + node
			}
			out = append(out, web.ChatStream{ID: ev.Message, Node: node, Text: ev.Text, Truncated: ev.Truncated, Dropped: ev.TextDropped})
		}
	}
	return out
}

// headChats reads the thread's latest checkpoint and returns its chat
// views (none when the thread has no checkpoint yet).
func headChats(ctx context.Context, rt Routes, thread string, p *engine.Pregel) ([]web.ChatView, error) {
	tup, err := rt.Runs.Checkpoint(ctx, thread, "")
	if errors.Is(err, runs.ErrUnknownCheckpoint) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	snap, err := p.StateOf(tup, true)
	if err != nil {
		return nil, err
	}
	return ChatViews(thread, tup.Config.CheckpointID, snap.Values), nil
}

// ChatFragment answers GET /threads/{thread}/chat: the thread page's chat
// views at the latest checkpoint, as the page renders them (an HTML
// fragment; the page's script swaps it in when a step changes messages).
func ChatFragment(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		chats, err := headChats(r.Context(), rt, thread, p)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		render(w, r, rt.Logger, http.StatusOK, web.Chats(chats))
	})
}

// findMessage returns the message with id in a state value holding
// messages.
func findMessage(v any, id string) (models.Message, bool) {
	msgs, ok := decodeMessages(v)
	if !ok {
		return models.Message{}, false
	}
	for _, m := range msgs {
		if m.ID == id {
			return m, true
		}
	}
	return models.Message{}, false
}

// messageAt reads the message id of key at checkpoint ckpt ("" for the
// latest): a 404 when the checkpoint does not hold it.
func messageAt(ctx context.Context, rt Routes, p *engine.Pregel, thread, ckpt, key, id string) (models.Message, *checkpoints.Tuple, error) {
	tup, err := rt.Runs.Checkpoint(ctx, thread, ckpt)
	if err != nil {
		return models.Message{}, nil, err
	}
	snap, err := p.StateOf(tup, false)
	if err != nil {
		return models.Message{}, nil, err
	}
	m, ok := findMessage(snap.Values[key], id)
	if !ok {
		return models.Message{}, nil, fmt.Errorf("%w: checkpoint %q holds no message %q under %q", runs.ErrUnknownCheckpoint, tup.Config.CheckpointID, id, key)
	}
	return m, tup, nil
}

// MessageText answers GET /threads/{thread}/checkpoints/{checkpoint}/messages/{key}/{message}:
// one message's whole text (a cut message's "Show all of it").
func MessageText(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread := chi.URLParam(r, "thread")
		ckpt, err := checkpointParam(r, "checkpoint", chi.URLParam(r, "checkpoint"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		m, _, err := messageAt(r.Context(), rt, p, thread, ckpt, chi.URLParam(r, "key"), chi.URLParam(r, "message"))
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte(m.Text()))
	})
}

// MessageOrigin answers GET /threads/{thread}/messages/{key}/{message}/origin
// ("fork from here"): it walks the head's lineage back to the checkpoint
// where the message first appeared under key and sends the person to
// that checkpoint's page, whose re-run and edit forms fork it. A message
// the head does not hold is a 404.
func MessageOrigin(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		thread, key, id := chi.URLParam(r, "thread"), chi.URLParam(r, "key"), chi.URLParam(r, "message")
		_, p, err := threadGraph(r.Context(), rt, thread)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		_, tup, err := messageAt(r.Context(), rt, p, thread, "", key, id)
		if err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		origin := tup.Config.CheckpointID
		for range maxOriginSteps {
			if tup.ParentConfig == nil || tup.ParentConfig.CheckpointID == "" {
				break
			}
			if _, tup, err = messageAt(r.Context(), rt, p, thread, tup.ParentConfig.CheckpointID, key, id); err != nil {
				if errors.Is(err, runs.ErrUnknownCheckpoint) {
					break
				}
				fail(w, r, rt.Logger, err)
				return
			}
			origin = tup.Config.CheckpointID
		}
		http.Redirect(w, r, ckptPath(url.PathEscape(thread), origin)+"#rerun", http.StatusSeeOther)
	})
}

// prefillMessageEdit fills the checkpoint page's edit form for key with
// the message id as a one-message list: sent as it is, add_messages
// replaces the message with the same id; changed, it edits it.
func prefillMessageEdit(ctx context.Context, rt Routes, p *engine.Pregel, thread string, d *web.CheckpointDetail, key, id string) error {
	m, _, err := messageAt(ctx, rt, p, thread, d.ID, key, id)
	if err != nil {
		return err
	}
	if d.Edits == nil {
		d.Edits = map[string]string{}
	}
	d.Edits[key] = encodeJSON([]models.Message{m}, true)
	d.EditingMessage = id
	return nil
}

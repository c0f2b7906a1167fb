package handlers_test

import (
	"strings"
	"testing"

	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/models"
)

// ChatViews finds the keys holding messages (typed or as LangChain
// dicts), folds each tool result under its call, keeps an unanswered
// call and an unmatched tool message visible, and reads usage, the
// offline flag and long texts.
func TestChatViews(t *testing.T) {
	t.Parallel()
	ai := models.AIWithToolCalls("checking", models.ToolCall{ID: "c1", Name: "fetch", Args: map[string]any{"id": 1}}, models.ToolCall{ID: "c2", Name: "calc"})
	ai.ID = "a1"
	ai.Usage = &models.UsageMetadata{InputTokens: 10, OutputTokens: 2, InputTokenDetails: &models.InputTokenDetails{CacheRead: models.Int(7)}}
	ai.ResponseMetadata = map[string]any{"offline": true}
	res := models.ToolResult("c1", models.Text("fetched"))
	res.ID = "t1"
	stray := models.ToolResult("zz", models.Text("nobody asked"))
	stray.ID = "t2"
	sys := models.System("be brief")
	sys.ID = "s1"
	human := models.Human(strings.Repeat("é", handlers.ChatTextBytes))
	human.ID = "h1"
	values := map[string]any{
		"messages": []models.Message{sys, human, ai, res, stray},
		"history":  []any{map[string]any{"type": "human", "content": "as a dict", "id": "d1"}},
		"log":      []any{"not", "messages"},
		"objs":     []any{map[string]any{"type": "other"}},
		"empty":    []any{},
		"n":        3,
	}
	views := handlers.ChatViews("th", "ck", values)
	if len(views) != 2 || views[0].Key != "history" || views[1].Key != "messages" {
		t.Fatalf("chat keys %+v; want history and messages", views)
	}
	if m := views[0].Messages; len(m) != 1 || m[0].Type != "human" || m[0].Text != "as a dict" {
		t.Fatalf("history %+v", m)
	}
	msgs := views[1].Messages
	var types []string
	for _, m := range msgs {
		types = append(types, m.Type)
	}
	if strings.Join(types, ",") != "system,human,ai,tool" {
		t.Fatalf("messages %v; want the tool result folded and the stray one kept", types)
	}
	h := msgs[1]
	if !h.Truncated || len(h.Text) > handlers.ChatTextBytes || h.Size != len(human.Text()) || !strings.Contains(h.TextURL, "/checkpoints/ck/messages/messages/h1") {
		t.Fatalf("long message: truncated %v, %d of %d bytes, url %q", h.Truncated, len(h.Text), h.Size, h.TextURL)
	}
	a := msgs[2]
	if len(a.ToolCalls) != 2 || a.ToolCalls[0].Result == nil || a.ToolCalls[0].Result.Text != "fetched" || a.ToolCalls[0].Args != `{"id":1}` || a.ToolCalls[1].Result != nil {
		t.Fatalf("tool calls %+v", a.ToolCalls)
	}
	if !a.Offline || a.Usage == nil || a.Usage.Input != 10 || a.Usage.Output != 2 || !a.Usage.HasCacheRead || a.Usage.CacheRead != 7 {
		t.Fatalf("ai usage %+v offline %v", a.Usage, a.Offline)
	}
	if a.EditURL != "/threads/th/checkpoints/ck?edit=messages&message=a1#edit-state" || a.ForkURL != "/threads/th/messages/messages/a1/origin" {
		t.Fatalf("links %q %q", a.EditURL, a.ForkURL)
	}
	if msgs[3].ID != "t2" {
		t.Fatalf("stray tool message %+v", msgs[3])
	}
}

// A long history shows its latest ChatMaxMessages messages and counts
// the rest.
func TestChatViewsCapsLongHistories(t *testing.T) {
	t.Parallel()
	var msgs []models.Message
	for range handlers.ChatMaxMessages + 5 {
		msgs = append(msgs, models.Human("x"))
	}
	v := handlers.ChatViews("th", "ck", map[string]any{"messages": msgs})
	if len(v) != 1 || v[0].Earlier != 5 || len(v[0].Messages) != handlers.ChatMaxMessages {
		t.Fatalf("view %d earlier, %d shown", v[0].Earlier, len(v[0].Messages))
	}
}

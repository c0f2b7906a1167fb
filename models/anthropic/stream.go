package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/superstep-dev/superstep/models"
)

// stream makes one streamed request: the first text block's deltas and
// every tool-input fragment go to onChunk as they arrive, every other
// block (thinking, tool_use, later text) whole when it stops; the SDK's
// accumulator builds the reply, and Parse reads it as it reads a whole
// one. The tool inputs are taken from the fragments as sent, since the
// accumulator replaces malformed input with {}.
func (m *Model) stream(ctx context.Context, p anthropic.MessageNewParams, resp *models.Response, onChunk func(models.Message) error, extra ...option.RequestOption) (models.Message, error) {
	start := time.Now()
	var httpResp *http.Response
	st := m.client.Messages.NewStreaming(ctx, p, append(extra, option.WithResponseInto(&httpResp))...)
	defer st.Close()
	var acc anthropic.Message
	fragments := map[int64]*strings.Builder{}
	began := false
	for st.Next() {
		ev := st.Current()
		if !began {
			resp.MarkFirstByte()
		}
		began = true
		if resp.RequestID == "" && httpResp != nil {
			resp.RequestID = httpResp.Header.Get("Request-Id")
		}
		if err := acc.Accumulate(ev); err != nil {
			return models.Message{}, fmt.Errorf("anthropic: reading the stream: %w", err)
		}
		var chunk models.Message
		switch e := ev.AsAny().(type) {
		case anthropic.ContentBlockStartEvent:
			if e.ContentBlock.Type != "tool_use" {
				continue
			}
			fragments[e.Index] = &strings.Builder{}
			chunk = toolChunk(e.ContentBlock.ID, e.ContentBlock.Name, "", e.Index)
		case anthropic.ContentBlockDeltaEvent:
			switch d := e.Delta.AsAny().(type) {
			case anthropic.TextDelta:
				if e.Index != 0 {
					continue // sent whole at its content_block_stop
				}
				chunk = models.AIChunk(d.Text)
			case anthropic.InputJSONDelta:
				if f := fragments[e.Index]; f != nil {
					f.WriteString(d.PartialJSON)
				}
				chunk = toolChunk("", "", d.PartialJSON, e.Index)
			default:
				// thinking_delta, signature_delta, citations_delta: the
				// accumulator gathers them; the block is sent whole at
				// its content_block_stop.
				continue
			}
		case anthropic.ContentBlockStopEvent:
			// Every block but a leading text block (whose deltas were
			// sent as text) is sent whole, as Parse writes it, so that
			// the merged chunks are the reply: with no "index" keys, a
			// content list merges by appending.
			if e.Index < 0 || int(e.Index) >= len(acc.Content) {
				continue
			}
			b := acc.Content[e.Index]
			if e.Index == 0 && b.Type == "text" {
				continue
			}
			input := ""
			if f := fragments[e.Index]; f != nil {
				input = f.String()
				if input == "" {
					input = "{}"
				}
			}
			cb := contentBlock(b, input)
			if cb == nil {
				continue
			}
			chunk = models.AIChunk("")
			chunk.Content = models.Blocks(cb)
		default:
			continue
		}
		if resp.FirstToken == 0 {
			resp.FirstToken = time.Since(start)
		}
		chunk.ID = acc.ID
		if err := onChunk(chunk); err != nil {
			return models.Message{}, err
		}
	}
	if resp.RequestID == "" && httpResp != nil {
		resp.RequestID = httpResp.Header.Get("Request-Id")
	}
	if err := st.Err(); err != nil {
		return models.Message{}, m.providerError(ctx, err, began)
	}
	if acc.StopReason == "" {
		// The connection ended without message_delta: the reply is cut.
		return models.Message{}, &models.ProviderError{Provider: Provider, Type: "connection_error", Message: "the stream ended before the reply was complete", RequestID: resp.RequestID, Midstream: began}
	}
	for i := range acc.Content {
		if f := fragments[int64(i)]; f != nil && f.Len() > 0 {
			acc.Content[i].Input = json.RawMessage(f.String())
		}
	}
	reply := Parse(&acc, resp.RequestID)
	last := models.AIChunk("")
	last.ID, last.Usage, last.ResponseMetadata, last.ChunkPosition = reply.ID, reply.Usage, reply.ResponseMetadata, "last"
	if err := onChunk(last); err != nil {
		return models.Message{}, err
	}
	return reply, nil
}

func toolChunk(id, name, args string, index int64) models.Message {
	c := models.AIChunk("")
	i := int(index)
	c.ToolCallChunks = []models.ToolCallChunk{{ID: id, Name: name, Args: args, Index: &i}}
	return c
}

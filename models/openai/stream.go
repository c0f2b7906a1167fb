package openai

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superstep-dev/superstep/models"
)

// stream makes one streamed request: content deltas and tool call
// fragments go to onChunk as they arrive, the SDK's accumulator builds
// the completion (usage from the include_usage chunk), and Parse reads
// it as it reads a whole one.
func (m *Model) stream(ctx context.Context, p openai.ChatCompletionNewParams, resp *models.Response, onChunk func(models.Message) error, extra ...option.RequestOption) (models.Message, error) {
	start := time.Now()
	var httpResp *http.Response
	st := m.client.Chat.Completions.NewStreaming(ctx, p, append(extra, option.WithResponseInto(&httpResp))...)
	defer st.Close()
	var acc openai.ChatCompletionAccumulator
	var usage *openai.CompletionUsage
	began, finished := false, false
	for st.Next() {
		ev := st.Current()
		if !began {
			resp.MarkFirstByte()
		}
		began = true
		if resp.RequestID == "" && httpResp != nil {
			resp.RequestID = httpResp.Header.Get("X-Request-Id")
		}
		if !acc.AddChunk(ev) {
			return models.Message{}, fmt.Errorf("openai: the stream's chunks do not add up (chunk %s)", ev.ID)
		}
		if ev.JSON.Usage.Valid() && ev.Usage.JSON.PromptTokens.Valid() {
			// The accumulator copies the numbers but not which were sent.
			u := ev.Usage
			usage = &u
		}
		if len(ev.Choices) == 0 {
			continue
		}
		d := ev.Choices[0].Delta
		if ev.Choices[0].FinishReason != "" {
			finished = true
		}
		if d.Content == "" && len(d.ToolCalls) == 0 {
			continue
		}
		chunk := models.AIChunk(d.Content)
		for _, tc := range d.ToolCalls {
			i := int(tc.Index)
			chunk.ToolCallChunks = append(chunk.ToolCallChunks, models.ToolCallChunk{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments, Index: &i})
		}
		if resp.FirstToken == 0 {
			resp.FirstToken = time.Since(start)
		}
		chunk.ID = ev.ID
		if err := onChunk(chunk); err != nil {
			return models.Message{}, err
		}
	}
	if resp.RequestID == "" && httpResp != nil {
		resp.RequestID = httpResp.Header.Get("X-Request-Id")
	}
	if err := st.Err(); err != nil {
		return models.Message{}, m.providerError(ctx, err, began, resp.RequestID)
	}
	if !finished {
		return models.Message{}, &models.ProviderError{Provider: m.provider, Type: "connection_error", Message: "the stream ended before the reply was complete", RequestID: resp.RequestID, Midstream: began}
	}
	if usage != nil {
		acc.Usage = *usage
	}
	reply := Parse(&acc.ChatCompletion, m.provider, resp.RequestID)
	last := models.AIChunk("")
	last.ID, last.Usage, last.ResponseMetadata, last.ChunkPosition = reply.ID, reply.Usage, reply.ResponseMetadata, "last"
	if err := onChunk(last); err != nil {
		return models.Message{}, err
	}
	return reply, nil
}

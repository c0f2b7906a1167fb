package models

import (
	"context"

	"github.com/google/uuid"

	"github.com/superstep-dev/superstep/engine"
)

// Call is how a node calls a chat model: it streams the reply, sending
// each chunk to the run's "messages" stream (engine.EmitMessageChunk,
// with the model's ls_* metadata) as it arrives, and returns the reply as
// an "ai" message. Every chunk and the reply carry one id — the
// provider's, or "run--<uuid>" when it gives none — so the reply, once
// the node returns it, is not streamed a second time. A reply of an
// offline model (ModelInfo.Offline) has response_metadata "offline":
// true. Outside a run the chunks go nowhere and Call is Stream.
func Call(ctx context.Context, m ChatModel, messages []Message, opts *CallOptions) (Message, error) {
	md := modelMetadata(m.Info(), opts)
	var id string
	reply, err := m.Stream(ctx, messages, opts, func(chunk Message) error {
		if id == "" {
			id = chunk.ID
			if id == "" {
				id = "run--" + uuid.NewString()
			}
		}
		chunk.ID = id
		engine.EmitMessageChunk(ctx, chunk, md)
		return nil
	})
	if err != nil {
		return Message{}, err
	}
	if id == "" {
		id = reply.ID
	}
	if id == "" {
		id = "run--" + uuid.NewString()
	}
	reply.ID = id
	if m.Info().Offline {
		// Every page that shows this reply can say it is not a real
		// model's (the Studio's chat view shows a badge).
		if reply.ResponseMetadata == nil {
			reply.ResponseMetadata = map[string]any{}
		}
		reply.ResponseMetadata["offline"] = true
		reply.ResponseMetadata["model_provider"] = m.Info().Provider
	}
	return reply, nil
}

// modelMetadata is upstream's ls_* metadata of a model's streamed chunks.
func modelMetadata(info ModelInfo, opts *CallOptions) map[string]any {
	md := map[string]any{"ls_provider": info.Provider, "ls_model_name": info.Model, "ls_model_type": "chat"}
	maxTokens := info.MaxTokens
	if opts != nil {
		if opts.Temperature != nil {
			md["ls_temperature"] = *opts.Temperature
		}
		if opts.MaxTokens > 0 {
			maxTokens = opts.MaxTokens
		}
	}
	if maxTokens > 0 {
		md["ls_max_tokens"] = maxTokens
	}
	return md
}

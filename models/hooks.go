package models

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Around runs one provider call between the hooks: BeforeCall sees (and
// may change or refuse) req, send makes the call, filling in what it
// learns (request id, time to first token) in resp, and AfterCall sees
// the outcome. Providers call it with their rendered request in
// req.Params and read req.Params back after BeforeCall, so what a hook
// changed is what is sent.
func (h Hooks) Around(ctx context.Context, req *Request, send func(ctx context.Context, resp *Response) (Message, error)) (Message, error) {
	if h.BeforeCall != nil {
		if err := h.BeforeCall(ctx, req); err != nil {
			return Message{}, err
		}
	}
	resp := &Response{}
	if h.FirstByte != nil {
		resp.firstByte = func() { h.FirstByte(ctx, req) }
	}
	start := time.Now()
	defer func() {
		// A provider (or an onChunk) that panics still ends the call for
		// the hooks: a lead-then-fan group waiting on it is released.
		if r := recover(); r != nil {
			resp.Duration, resp.Err = time.Since(start), fmt.Errorf("models: the call panicked: %v", r)
			if h.AfterCall != nil {
				h.AfterCall(ctx, req, resp)
			}
			panic(r)
		}
	}()
	msg, err := send(ctx, resp)
	resp.Duration = time.Since(start)
	if err == nil {
		resp.MarkFirstByte() // a provider that did not say when
	}
	if err != nil {
		msg = Message{}
	}
	resp.Message, resp.Err = msg, err
	if err == nil {
		resp.Usage = msg.Usage
	}
	if h.AfterCall != nil {
		h.AfterCall(ctx, req, resp)
	}
	return msg, err
}

// HeaderOptions turns a Request's Headers into a provider SDK's request
// options (with is the SDK's option.WithHeader), in name order so the
// request is the same bytes every time.
func HeaderOptions[O any](headers map[string]string, with func(key, value string) O) []O {
	if len(headers) == 0 {
		return nil
	}
	out := make([]O, 0, len(headers))
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		out = append(out, with(k, headers[k]))
	}
	return out
}

// NewRequest is the Request a provider hands to its hooks: opts copied
// (nil is the zero options) and params the provider's rendered request.
func NewRequest(info ModelInfo, messages []Message, opts *CallOptions, params any, stream bool) *Request {
	return &Request{Provider: info.Provider, Model: info.Model, Messages: messages, Options: opts.clone(), Params: params, Stream: stream}
}

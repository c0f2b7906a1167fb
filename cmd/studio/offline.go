package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/anthropic"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/models/promptcache"
)

// offlineMinTokens is the offline model's minimum cacheable prefix, for
// the double and the prompt-cache layer alike: the examples' prompts are
// a few hundred tokens, under every real model's minimum, and the
// offline Studio is there to show the cache at work.
const offlineMinTokens = 256

// promptCacheConfig is the Studio's prompt-cache layer: Claude Sonnet
// 4.x list prices (USD 3 in, 15 out per million tokens) for Sonnet and
// for the offline model, which is priced like it so the panel shows what
// caching would save; and the offline model's minimum.
func promptCacheConfig() promptcache.Config {
	sonnet := promptcache.AnthropicPrice(3, 15)
	minTokens := maps.Clone(promptcache.DefaultMinTokens)
	minTokens[modelenv.OfflineModel] = offlineMinTokens
	return promptcache.Config{
		Prices:    map[string]promptcache.Price{"claude-sonnet-4": sonnet, modelenv.OfflineModel: sonnet},
		MinTokens: minTokens,
	}
}

// offlineModel is modelenv.Offline's model — the local provider double
// (its prompt-cache emulation on, with examples.Respond) behind the
// Anthropic adapter, served in process — with hooks installed on the
// adapter: modelenv.Config has no Hooks, so the Studio builds it here to
// put the prompt-cache layer's on it. Like modelenv's, it says it is
// offline (its replies are badged) and prefixes the double's ids with a
// nonce of its own, so a thread continued after a restart keeps
// distinct ids.
func offlineModel(hooks models.Hooks) (models.ChatModel, error) {
	double := localprovider.New(localprovider.Config{Respond: examples.Respond, CacheMinTokens: map[string]int{modelenv.OfflineModel: offlineMinTokens}})
	m, err := anthropic.New(anthropic.Config{
		APIKey:     "offline", // the double wants a key; this one opens nothing
		BaseURL:    "http://offline.invalid/",
		Model:      modelenv.OfflineModel,
		HTTPClient: &http.Client{Transport: pipeTransport(double)},
		Hooks:      hooks,
	})
	if err != nil {
		return nil, err
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	return &offline{Model: m, prefix: hex.EncodeToString(nonce[:]) + "_"}, nil
}

// offline is the Anthropic adapter on the double, labelled offline.
type offline struct {
	*anthropic.Model
	prefix string
}

func (*offline) Info() models.ModelInfo {
	return models.ModelInfo{Provider: modelenv.OfflineProvider, Model: modelenv.OfflineModel, Offline: true}
}

func (m *offline) Generate(ctx context.Context, messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	reply, err := m.Model.Generate(ctx, messages, opts)
	return m.unique(reply), err
}

func (m *offline) Stream(ctx context.Context, messages []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	if onChunk != nil {
		inner := onChunk
		onChunk = func(c models.Message) error { return inner(m.unique(c)) }
	}
	reply, err := m.Model.Stream(ctx, messages, opts, onChunk)
	return m.unique(reply), err
}

// unique prefixes the double's ids in a reply or chunk with the nonce.
func (m *offline) unique(msg models.Message) models.Message {
	fix := func(id string) string {
		if strings.Contains(id, "_local_") {
			return strings.Replace(id, "_local_", "_local_"+m.prefix, 1)
		}
		return id
	}
	msg.ID = fix(msg.ID)
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	for i := range msg.ToolCalls {
		msg.ToolCalls[i].ID = fix(msg.ToolCalls[i].ID)
	}
	msg.InvalidToolCalls = slices.Clone(msg.InvalidToolCalls)
	for i := range msg.InvalidToolCalls {
		msg.InvalidToolCalls[i].ID = fix(msg.InvalidToolCalls[i].ID)
	}
	msg.ToolCallChunks = slices.Clone(msg.ToolCallChunks)
	for i := range msg.ToolCallChunks {
		msg.ToolCallChunks[i].ID = fix(msg.ToolCallChunks[i].ID)
	}
	return msg
}

// pipeTransport serves h in process over in-memory connections
// (net.Pipe): real HTTP/1.1, streamed as over a socket, with no port.
func pipeTransport(h http.Handler) http.RoundTripper {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	go func() { _ = (&http.Server{Handler: h}).Serve(l) }()
	return &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			select {
			case l.conns <- server:
				return client, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-l.done:
				return nil, net.ErrClosed
			}
		},
	}
}

// pipeListener hands the server the far ends of pipeTransport's
// connections.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "offline-model" }

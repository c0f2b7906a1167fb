package agents_test

import (
	"context"
	"errors"
	"sync"

	"github.com/superstep-dev/superstep/models"
)

// scripted is a ChatModel that answers from a script, one reply per call,
// and records what each call was given.
type scripted struct {
	mu      sync.Mutex
	replies []models.Message
	calls   []scriptedCall
}

type scriptedCall struct {
	Messages []models.Message
	Options  models.CallOptions
}

func newScripted(replies ...models.Message) *scripted { return &scripted{replies: replies} }

func (s *scripted) Info() models.ModelInfo {
	return models.ModelInfo{Provider: "fake", Model: "scripted", Offline: true}
}

func (s *scripted) next(messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := scriptedCall{Messages: append([]models.Message(nil), messages...)}
	if opts != nil {
		c.Options = *opts
	}
	s.calls = append(s.calls, c)
	if len(s.replies) == 0 {
		return models.Message{}, errors.New("scripted model: no more replies")
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, nil
}

func (s *scripted) Generate(_ context.Context, messages []models.Message, opts *models.CallOptions) (models.Message, error) {
	return s.next(messages, opts)
}

// Stream sends the reply's text as two chunks, then the reply.
func (s *scripted) Stream(_ context.Context, messages []models.Message, opts *models.CallOptions, onChunk func(models.Message) error) (models.Message, error) {
	r, err := s.next(messages, opts)
	if err != nil {
		return r, err
	}
	text := r.Text()
	half := len(text) / 2
	for _, part := range []string{text[:half], text[half:]} {
		if err := onChunk(models.Message{Type: models.TypeAIChunk, ID: r.ID, Content: models.Text(part)}); err != nil {
			return models.Message{}, err
		}
	}
	return r, nil
}

func (s *scripted) recorded() []scriptedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]scriptedCall(nil), s.calls...)
}

func toolCall(id, name string, args map[string]any) models.ToolCall {
	return models.ToolCall{ID: id, Name: name, Args: args}
}

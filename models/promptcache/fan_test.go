package promptcache

import (
	"context"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// TestLeadThenFan: of three calls that opt in together, one goes; the
// others wait until its first byte, then go.
func TestLeadThenFan(t *testing.T) {
	t.Parallel()
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 3)
	c.onWait = func() { waiting <- struct{}{} }
	ctx := LeadThenFan(WithThread(context.Background(), "t-fan"), "children")
	hooks := c.Hooks()
	entered := make(chan *models.Response, 3)
	firstByte := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("shared prefix")), anthropic.NewUserMessage(anthropic.NewTextBlock(string(rune('a' + i))))}}
			req := &models.Request{Provider: "anthropic", Model: "claude-sonnet-4-5", Params: p}
			_, err := hooks.Around(ctx, req, func(ctx context.Context, resp *models.Response) (models.Message, error) {
				entered <- resp
				<-firstByte
				return models.AI("ok"), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	leader := <-entered
	<-waiting
	<-waiting
	select {
	case <-entered:
		t.Fatal("a sibling went before the leader's first byte")
	default:
	}
	leader.MarkFirstByte()
	<-entered
	<-entered
	close(firstByte)
	wg.Wait()
}

package promptcache

import (
	"context"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/superstep-dev/superstep/models"
)

// TestLeadThenFan: of three calls that opt in together, one goes; the
// others wait until its first byte, then go. A later burst of the same
// group leads anew — outside a node too, where no checkpoint or step
// tells bursts apart — and a finished group is not kept.
func TestLeadThenFan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ctx  context.Context
	}{
		{"with a thread", WithThread(context.Background(), "t-fan")},
		{"outside a node, no thread", context.Background()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			waiting := make(chan struct{}, 3)
			c.onWait = func() { waiting <- struct{}{} }
			ctx := LeadThenFan(tc.ctx, "children")
			for burst := range 3 {
				fanBurst(t, c, ctx, waiting)
				c.mu.Lock()
				n := len(c.fans)
				c.mu.Unlock()
				if n != 0 {
					t.Fatalf("after burst %d, %d groups held; want none", burst, n)
				}
			}
		})
	}
}

// fanBurst starts three calls together and checks that one leads and the
// two others go only after its first byte.
func fanBurst(t *testing.T, c *Cache, ctx context.Context, waiting chan struct{}) {
	t.Helper()
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

package localprovider_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/superstep-dev/superstep/models/localprovider"
)

// chatTurns are a first request with a system prompt of systemBytes bytes
// (about a quarter as many tokens) and the second turn that extends it.
func chatTurns(systemBytes int) (first, second openai.ChatCompletionNewParams) {
	system := openai.SystemMessage(strings.Repeat("Answer briefly. ", systemBytes/16))
	first = openai.ChatCompletionNewParams{Model: "gpt-test", Messages: []openai.ChatCompletionMessageParamUnion{system, openai.UserMessage("Weather in Paris?")}}
	second = first
	second.Messages = append(append([]openai.ChatCompletionMessageParamUnion(nil), first.Messages...), openai.AssistantMessage("18°C."), openai.UserMessage("And Rome?"))
	return first, second
}

func chat(t *testing.T, c openai.Client, p openai.ChatCompletionNewParams, opts ...option.RequestOption) openai.CompletionUsage {
	t.Helper()
	res, err := c.Chat.Completions.New(t.Context(), p, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return res.Usage
}

// TestOpenAICacheImplicit checks the implicit mode: a second turn reads
// the first turn's prompt, floored to 128 tokens, when it reaches 1024
// tokens, within its prompt_cache_key and retention.
func TestOpenAICacheImplicit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		systemBytes int
		firstKey    string
		secondKey   string
		retention   openai.ChatCompletionNewParamsPromptCacheRetention
		advance     time.Duration
		reads       bool
	}{
		{"second turn reads the first", 4400, "", "", "", 0, true},
		{"below 1024 tokens nothing is cached", 3900, "", "", "", 0, false},
		{"same prompt_cache_key reads", 4400, "thread-1", "thread-1", "", 0, true},
		{"another prompt_cache_key misses", 4400, "thread-1", "thread-2", "", 0, false},
		{"no prompt_cache_key after one misses", 4400, "thread-1", "", "", 0, false},
		{"in_memory lives 5 minutes idle", 4400, "", "", "", 4 * time.Minute, true},
		{"in_memory is gone after 6 idle minutes", 4400, "", "", openai.ChatCompletionNewParamsPromptCacheRetentionInMemory, 6 * time.Minute, false},
		{"24h outlives an hour", 4400, "", "", openai.ChatCompletionNewParamsPromptCacheRetention24h, 2 * time.Hour, true},
		{"24h is gone after a day", 4400, "", "", openai.ChatCompletionNewParamsPromptCacheRetention24h, 25 * time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			_, c := setupOpenAI(t, localprovider.Config{Clock: clock})
			first, second := chatTurns(tc.systemBytes)
			first.PromptCacheRetention, second.PromptCacheRetention = tc.retention, tc.retention
			if tc.firstKey != "" {
				first.PromptCacheKey = openai.String(tc.firstKey)
			}
			if tc.secondKey != "" {
				second.PromptCacheKey = openai.String(tc.secondKey)
			}
			u1 := chat(t, c, first)
			if big := u1.PromptTokens >= 1024; big != (tc.systemBytes > 4096) {
				t.Fatalf("first prompt is %d tokens: the case's size is on the wrong side of 1024", u1.PromptTokens)
			}
			if u1.PromptTokens%128 == 0 {
				t.Fatalf("first prompt is %d tokens, a multiple of 128: flooring would go unseen", u1.PromptTokens)
			}
			clock.Advance(tc.advance)
			u2 := chat(t, c, second)
			want := int64(0)
			if tc.reads {
				want = u1.PromptTokens / 128 * 128
			}
			if u2.PromptTokensDetails.CachedTokens != want {
				t.Fatalf("cached_tokens = %d, want %d (first prompt %d tokens)", u2.PromptTokensDetails.CachedTokens, want, u1.PromptTokens)
			}
			if u1.PromptTokensDetails.CachedTokens != 0 || u2.PromptTokensDetails.CacheWriteTokens != 0 {
				t.Fatalf("first turn read %d, second wrote %d: want 0 (implicit writes are free and unreported)", u1.PromptTokensDetails.CachedTokens, u2.PromptTokensDetails.CacheWriteTokens)
			}
		})
	}
}

func TestOpenAICacheInMemoryLivesAtMostAnHour(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	_, c := setupOpenAI(t, localprovider.Config{Clock: clock})
	first, _ := chatTurns(4400)
	u1 := chat(t, c, first)
	want := u1.PromptTokens / 128 * 128
	for i := range 14 { // read every 4 minutes: the idle timer never runs out
		clock.Advance(4 * time.Minute)
		if u := chat(t, c, first); u.PromptTokensDetails.CachedTokens != want {
			t.Fatalf("read %d at minute %d, want %d", u.PromptTokensDetails.CachedTokens, 4*(i+1), want)
		}
	}
	clock.Advance(4 * time.Minute) // minute 60: idle only 4 minutes, but an hour old
	if u := chat(t, c, first); u.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("read %d after an hour, want the entry gone", u.PromptTokensDetails.CachedTokens)
	}
}

// TestOpenAICacheOmittedLikeVLLM checks Config.OmitCachedTokens on a
// stream's usage chunk: no prompt_tokens_details at all, while
// prompt_tokens still counts the whole prompt.
func TestOpenAICacheOmittedLikeVLLM(t *testing.T) {
	t.Parallel()
	for _, omit := range []bool{false, true} {
		_, c := setupOpenAI(t, localprovider.Config{OmitCachedTokens: omit})
		first, second := chatTurns(4400)
		u1 := chat(t, c, first)
		second.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		st := c.Chat.Completions.NewStreaming(t.Context(), second)
		var usage openai.CompletionUsage
		for st.Next() {
			if ch := st.Current(); len(ch.Choices) == 0 {
				usage = ch.Usage
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if usage.PromptTokens <= u1.PromptTokens {
			t.Fatalf("omit %v: prompt_tokens %d, want more than the first turn's %d", omit, usage.PromptTokens, u1.PromptTokens)
		}
		has := strings.Contains(usage.RawJSON(), "prompt_tokens_details")
		if has == omit || (!omit && usage.PromptTokensDetails.CachedTokens != u1.PromptTokens/128*128) {
			t.Fatalf("omit %v: usage = %s", omit, usage.RawJSON())
		}
	}
}

func TestOpenAICacheOff(t *testing.T) {
	t.Parallel()
	_, c := setupOpenAI(t, localprovider.Config{DisablePromptCache: true})
	first, second := chatTurns(4400)
	chat(t, c, first)
	if u := chat(t, c, second); u.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("cached_tokens = %d with the cache off", u.PromptTokensDetails.CachedTokens)
	}
}

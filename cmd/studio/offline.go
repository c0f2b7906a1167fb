package main

import (
	"maps"

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

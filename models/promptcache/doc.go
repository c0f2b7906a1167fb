// Package promptcache is the prompt-cache layer of the model providers:
// it places Anthropic's cache markers, keeps every thread's requests
// byte-stable, explains every cache break and records every model call,
// so a long agent conversation pays cache-read prices by default and a
// break is never silent (issue #17; the design is
// reference/models-and-prompt-caching.md §5–6).
//
//	pc, err := promptcache.New(promptcache.Config{
//		Store:       graphStore,  // the graph's store.Store (pgstore on Postgres)
//		Checkpoints: saver,       // the graph's checkpointer: forks compare with their own branch
//		Prices:      map[string]promptcache.Price{"claude-sonnet-4": promptcache.AnthropicPrice(3, 15)},
//	})
//	model, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", Hooks: pc.Hooks()})
//
//	// in a node:
//	sys, err := pc.System(ctx,
//		promptcache.Section("role", loadRole),         // computed once per thread
//		promptcache.Boundary(),                        // static above, dynamic below
//		promptcache.Section("user", loadUserFacts),
//		promptcache.DangerousUncachedSection("files", openFiles, "the open files change every turn"),
//	)
//	reply, err := models.Call(ctx, model, append([]models.Message{sys}, state.Messages...), opts)
//
// # Markers
//
// On every Anthropic request (after the provider's Render, in
// Hooks.BeforeCall) the layer strips the markers below the top level and
// places its own, never more than four: the last tool; the end of the
// system prompt's static part (the block System marked, else the last
// system block); the last cacheable block of the last message; and, when
// the turn added more message blocks than a marker's 20-block lookback
// reaches from the previous call's last written position, a bridging
// marker 18 blocks after it (R2; Config.NoBridge leaves it out). A
// top-level automatic cache_control set by the caller is kept, takes a
// slot and replaces the last-message marker. Tools and system get the
// thread's latched TTL (Config.TTL, chosen on the thread's first call);
// message markers are 5m, so 1h entries always come before 5m ones. The
// automatic marker comes last of all: a caller's automatic 1h marker
// after a 5m marker of the layer's (a 5m thread TTL, or a bridge) is
// downgraded to 5m, never the earlier markers upgraded, since the static
// TTL is latched (R4) and a flip would bust every tier.
//
// Every call's record lists the markers as placed, the automatic one
// included (Marker.Auto, on the block the provider puts it), so the next
// call's bridge and lookback_exceeded know where it wrote. Distances are
// counted as the provider's 20-block lookback counts them: in content
// blocks — tools, system blocks, message blocks (Marker.Block).
//
// A fire-and-forget fork (a summary, a title) calls with
// SkipCacheWrite(ctx): its message marker goes on the second-to-last
// message, the last point it shares with its parent, so its private tail
// is never written (R3), and it changes none of the thread's latches.
//
// # Byte-stable requests and latches
//
// A thread is a session (§6.1). What could make two renderings of the same
// state differ is latched per thread and persisted in Config.Store under
// ("promptcache", <thread>), so a restart or a configuration change
// mid-thread cannot flip it: the static-prefix TTL (R4), the
// anthropic-beta set, which only grows (R12), the Section memo (R5), and
// each tool's rendered definition, pinned byte for byte on first use and
// sent as pinned when its description or schema drifts (R6; the record
// names the pinned tools). Reset(ctx, thread) is the explicit clear or
// compact: it clears all of them and starts a new break-detection
// baseline. The providers' Render already writes no map-order, time or
// id dependent bytes (JSON objects are key-sorted; ids come from the
// state), which TestByteStable checks from two fresh Caches on one store.
//
// # Break detection
//
// Before each call the layer hashes every dimension that can break the
// cache — the twelve of R11 (system text, each tool, model, speed, cache
// TTL and scope, global-cache strategy, betas, automatic mode, overage,
// cache editing, effort, extra body; overage and cache editing have no
// public API and hash as empty) plus tool_choice, thinking and the message
// prefix (an earlier message edited) — and diffs them against the
// previous call of the same lineage: the same thread, graph path (the
// checkpoint namespace without task ids) and node. With
// Config.Checkpoints the previous call is the nearest on the call's
// checkpoint ancestors, so a time-travel fork compares with its own
// branch (the record's lineage says "fork:branch"); Send siblings of one
// step are not each other's baseline. When that walk cannot be made —
// the saver fails, or the call's checkpoint is not saved and cannot be
// waited for (engine.ErrCheckpointNotSaved under DurabilityExit) — the
// baseline is unknown: no break is judged, the record's break says
// suspected baseline_unknown with a Reason, and the error goes to
// Config.OnError. The latest call is no stand-in: on a fork it is
// another branch's, and would claim a false break or hide a real one. After the call, a drop of cache
// reads by more than 5% of the previous call's, and by at least
// Config.MinDropTokens (1024), is a break, reported with the dimensions
// that changed, or — when none did — the suspected cause: ttl_expired
// (the previous call's shortest marker TTL, or Config.OpenAIIdle, passed
// on Config.Now's clock), lookback_exceeded (more than 20 new blocks and
// no marker within reach), below_minimum (the prompt is shorter than the
// model's minimum, Config.MinTokens), concurrent_sibling (a call with the
// same tools and system was in flight without its first byte), unknown.
//
// # Records
//
// Every call leaves one Record (§6.3): where it ran (thread, checkpoint,
// namespace, node, task, attempt, lineage), its hashes, marker positions,
// block counts, usage (uncached input, reads, 5m and 1h writes, output),
// hit ratio, cost with and without caching from Config.Prices (or
// unpriced, cost unknown, for a model without a price), and the break
// verdict. It is saved in Config.Store under ("promptcache",
// <thread>, "calls") and emitted as the node's custom event
// (engine.Emit, a Record value), so the Studio can show it live and after
// a restart; Records(ctx, thread) reads a thread's records, oldest first.
// Anthropic writes the API does not split by TTL count as 5m writes
// unless every marker was 1h.
//
// # OpenAI-compatible providers
//
// OpenAI caches implicitly. The layer sends prompt_cache_key =
// PromptCacheKey(thread), a hash of the thread id (one key per thread;
// above ~15 requests a minute for one prefix and key OpenAI spills onto
// other machines, and a thread that busy would need the key sharded,
// which the layer does not do), pins function tools as for Anthropic,
// reads cached_tokens (and cache_write_tokens) as cache reads and writes,
// and runs the same break detection. Servers that report no cached
// tokens (Ollama; vLLM without --enable-prompt-tokens-details) never show
// a break.
//
// # Lead-then-fan
//
// Requests started together cannot read each other's cache entries: an
// entry is readable only once its writer's response starts. A node whose
// Send siblings share a prefix opts in with
//
//	ctx = promptcache.LeadThenFan(ctx, "")
//
// before calling its model: of the siblings of one step (same thread,
// graph path, node and checkpoint), the first call goes at once and the
// others wait in BeforeCall until its first byte (Hooks.FirstByte), or
// its failure, then go and read its entry. A non-empty group name groups
// calls across nodes instead. A waiting call gives up when its context
// ends. A group is dropped when its leader's call ends, so the layer
// holds only the groups whose leader is in flight, and a call that starts
// later leads anew (and reads what the finished leader wrote). Outside a
// node, with or without WithThread, the first call of each burst of one
// thread and group leads and the rest of the burst waits for it.
//
// # Subgraphs that share the parent's prefix
//
// A subgraph is a lineage of its own: it renders its own system prompt
// and tools and is compared with its own previous calls. A node inside a
// subgraph opts into its parent's cache with
//
//	ctx = promptcache.ShareParentPrefix(ctx)
//
// before calling its model (R7, §6.2). After every successful call the
// layer keeps the call's cache-safe parameters per thread and graph path:
// the system blocks and tool definitions exactly as it sent them (pinned,
// with the static boundary), while the model, thinking config and message
// prefix are in the call's record. An opted-in call is sent with the
// parent graph's latest ones (the enclosing graph path, any node) instead
// of its own system and tools — never re-rendered, so a Section or flag
// that moved in between cannot change the bytes — under the thread's
// latches, so it reads the parent's tools and system entries; its
// messages are its own. Its record's lineage is "subgraph:shared", and
// break detection compares it with the parent's call (or with its own
// previous call when that is later): the messages are not a dimension
// then, and reading nothing where the parent had cached a prefix is the
// break, named by the dimensions that differ from the parent's (a model
// switch, a thinking config). Before the parent made a call, after Reset,
// outside a subgraph and on OpenAI-compatible providers (whose cache key
// is the thread's already) the option changes nothing. The parameters are
// kept in memory, not in Config.Store: after a restart a subgraph renders
// its own until its parent graph has called again.
//
// # Where the time goes
//
// BenchmarkRenderRequest100k: the layer's work on a 100k-token request
// (strip, pin, hash every block with xxh3, diff, place) takes about
// 0.13 ms, against a 2 ms budget; blocks are hashed from their fields,
// not encoded, and only tool definitions are JSON-encoded.
//
// # Not here yet
//
// Cloned replacement state (R8),
// the global cache scope (R1's splitter), pre-warming with max_tokens: 0
// and clearing old tool results (R10).
package promptcache

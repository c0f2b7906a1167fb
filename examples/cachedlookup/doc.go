// Package cachedlookup is a price-quote graph for a shop that sells in
// several currencies. Every quote needs an exchange rate from a market-data
// provider that is slow, rate-limited and billed per call, while rates
// only move about once a minute. Caching the lookup node for 30 seconds
// cuts the provider calls to one per currency pair per window.
//
// # The graph
//
//	START ─ lookup_rate (cached, TTL 30s) ─ quote ─ END
//
// # What it demonstrates
//
//   - engine.WithCache(engine.CachePolicy{TTL: ...}) on a node: a run whose
//     lookup input was seen within the TTL replays the stored writes
//     without calling the node. The Studio (and any listener) sees a
//     TaskFinished event with Cached set and no TaskStarted.
//   - The cache key is the node's input, so the lookup node reads only the
//     pair (it is added with engine.AddNodeFunc over a one-field struct):
//     quotes for different amounts share the cached rate, and a different
//     pair misses.
//   - FetchedAt is stamped from an injectable clock when the node really
//     runs, which makes a cache hit visible in the result itself: the
//     second quote carries the first quote's time.
//   - Failed lookups are not cached; the next quote asks the provider
//     again.
package cachedlookup

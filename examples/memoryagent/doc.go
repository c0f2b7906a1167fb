// Package memoryagent is a personal assistant that remembers what its user
// tells it across conversations: "I'm allergic to peanuts" said on Monday
// answers "Which foods should I avoid?" on Friday, on another thread, with
// no word in common between the two.
//
// # The graph
//
//	START ─ remember ─┬─(ask)─ recall ─ reply ─ END
//	                  └─(done)─ END
//
// remember writes the turn's facts to the long-term store, reached from
// inside the node with engine.StoreFrom, under the namespace
// ("memories", user), each keyed by a hash of its text and with the text
// field embedded for semantic search. When the turn asks a question,
// recall searches the user's namespace with it and reply has the model
// answer from the recalled memories, best first.
//
// # What it demonstrates
//
//   - Long-term memory belongs to the store, not to the thread: state and
//     checkpoints are per conversation, the store is shared by every run of
//     the graph (and by the Studio's store browser).
//   - Semantic search over the offline embedder (embed.Offline(): GloVe
//     word vectors, no network), which finds paraphrases lexical matching
//     misses; NewStore sets it up on the memory store, and a Postgres store
//     with pgvector works the same way.
//   - Per-user isolation through namespaces, and clear errors for a user id
//     that cannot name one.
//
// The answer comes from a Model; ScriptedModel repeats the best memory so
// the tests can check retrieval through the answer, and an
// OpenAI-compatible chat client satisfies the same interface.
package memoryagent

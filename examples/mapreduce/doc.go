// Package mapreduce summarises a long document the way an on-call team
// digests an incident report or a legal team a contract: split it into
// sections, summarise every section in parallel with a language model, and
// combine the summaries into one digest.
//
// # The graph
//
//	START ─ plan ─(Send × sections)─ summarise ─ combine ─ END
//
// plan splits the Markdown document at "## " headings. A conditional edge
// then returns one engine.Send per section (engine.SendTo); each Send
// becomes a summarise task whose whole input is its Section (the worker is
// added with engine.AddNodeFunc for that type), and all of them run in
// parallel in one superstep. Each worker appends its Summary to a state
// key with the "append" reducer; combine, reached by a plain edge, runs
// once when every worker is done.
//
// # What it demonstrates
//
// The aggregate is deterministic. Workers finish in whatever order the
// model answers, but the barrier applies their writes in Send order, so
// the summaries, and the digest built from them, always follow the
// document. The tests force the workers to finish in reverse and check
// exactly that.
//
// The model sits behind a one-method Model interface. ScriptedModel (the
// first sentence of each section) keeps the example offline and
// deterministic; an OpenAI-compatible chat client satisfies the same
// interface.
package mapreduce

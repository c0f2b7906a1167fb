// Package engine is Superstep's graph runtime: LangGraph's Pregel/BSP
// semantics in Go. It never imports a database driver, HTTP or templates;
// persistence is reached only through the checkpoints, cache and store
// interfaces.
//
// # Two API levels
//
// The typed StateGraph is what most programs use. The state is a struct;
// each json-tagged field is a channel. A field holds one value per
// superstep unless it declares a reducer (`reduce:"append"`,
// `reduce:"add"`, or StateGraph.Reducer), in which case every write of a
// superstep is folded in:
//
//	type State struct {
//		Question string   `json:"question"`
//		Notes    []string `json:"notes" reduce:"append"`
//	}
//	g := engine.NewStateGraph[State]()
//	g.AddNode("research", func(ctx context.Context, s State) (engine.Output, error) {
//		return engine.Update{"notes": "found it"}, nil
//	})
//	g.AddEdge(engine.Start, "research")
//	graph, err := g.Compile(engine.CompileOptions{Checkpointer: checkpoints.NewMemory()})
//
// Nodes return an Update (keys written; an absent key is not written, a
// zero value is written zero), Set(key, value) (one key, without the
// map: the cheapest update in a hot loop), Updates (ordered, may repeat a
// key), a Command (update and route, or Send), or nil. Unknown keys and values of
// the wrong type are ErrInvalidUpdate errors naming the node and key.
//
// A node added with AddNodeWrites (AddNodeFuncWrites for another input
// type) does not return its update: it gets a *Writes and calls
// w.Set(key, value) for each write, then returns nil or an error. The
// writes are exactly those of returning the same Sets as Updates — same
// checks and errors, order, events, checkpoints — and an attempt that
// fails, panics or is interrupted leaves none (a retry starts empty). It
// is the cheapest form: a returned Output is an interface the node's
// update is boxed into on every call, while Sets go into a buffer the
// task reuses.
// A Writes is only valid during its call: Set on one kept for a later
// step or a retry panics and writes nothing, and a goroutine the node
// left running must not call it (see Writes). Route with AddNode and a
// Command.
//
// The state a node receives is a copy of the struct, but its slices, maps
// and pointers are the channels' own values, shared with the other nodes
// of the step (as upstream hands nodes the channels' objects): treat them
// as read-only and return what changes. A node that appends to or edits
// them in place changes what its siblings, later steps and checkpoints
// see, outside the reducers.
//
// Underneath is the low-level Pregel API (NewNode, NewPregel): channels
// from package engine/channels, nodes with trigger channels, read channels
// (one channel read raw, several as a map), an input mapper, writers
// (WriteEntry with skip-none and a mapper, WriteTuple mapping one output to
// several writes), retry and cache policies. StateGraph compiles to it
// exactly as upstream does: a "branch:to:<node>" channel per node, a
// NamedBarrierValue per join (AddJoin), LastValueAfterFinish for deferred
// nodes, and routers as writers.
//
// # Supersteps
//
// Each superstep plans the tasks whose trigger channels have a version
// newer than the one they last saw (and one task per pending Send), runs
// them in parallel against the same snapshot, and then applies every write
// at a barrier in a deterministic order — pull tasks by node name, then
// Send tasks by index — whatever order they finished in. A step gives every
// channel it changes the same new version. The first failing task cancels
// its siblings; writes of tasks that succeeded are kept as pending writes,
// so running the thread again does not re-run them. The recursion limit
// counts supersteps exactly as upstream (a 3-node chain needs a limit of
// 4); RecursionError says how to raise it.
//
// Task ids are upstream's: the xxh3-128 of the checkpoint id and the
// task's namespace, step, node, kind and triggers, formatted as a UUID.
//
// # Send, Command and routing
//
// A router (AddConditionalEdges) sees the state with only its own node's
// writes applied and returns a Route: nodes to run next and Sends, each of
// which runs its node once in the next superstep with the Send's argument
// as input. AddNodeFunc declares a node whose input type differs from the
// state, which is how Send targets receive typed arguments.
//
// # Fan-in: the node that runs twice
//
// A node reached by plain edges from paths of different lengths runs once
// per arrival. Compile's topology lint reports it (Graph.Warnings), with
// the join (AddJoin) or Defer option that makes it run once. The lint also
// reports nodes unreachable from Start and nodes from which the run cannot
// end.
//
// # Retry and the node cache
//
// RetryPolicy follows upstream's arithmetic (initial interval, backoff
// factor, max interval, max attempts, additive jitter); the first policy
// whose RetryOn accepts an error decides, and attempts are counted across
// policies. DefaultRetryOn retries everything but errors marked Permanent,
// cancellation, invalid updates, JSON errors and panics. Attempt(ctx) tells
// a node which attempt it is.
//
// CachePolicy caches a node's successful writes keyed by the xxh3-128 of its
// canonical JSON input (or a key function's bytes) in a cache.Cache; a hit
// replays the writes, routing included, without running the node, and is
// reported as cached.
//
// # Checkpoints, durability and time travel
//
// With a checkpointer every superstep is saved: channel values (only those
// that changed), versions, versions seen, metadata (source, step,
// parents, run id, RunOptions.Metadata), and the names of the tasks
// planned from it (checkpoints.Checkpoint.Next: the loop plans the next
// step before it saves, and runs those tasks), so a history page lists
// each checkpoint's next tasks, Sends included, without loading its state
// or its version maps. Upstream saves no such list; its history computes
// next tasks per checkpoint when read. DurabilitySync waits for each save,
// DurabilityAsync (the default) saves in order in the background, and
// DurabilityExit saves only when the run stops. GetState and
// GetStateHistory read a thread back: values, next tasks, and each task's
// result or error; the history has a metadata-only mode that loads no
// values. Static breakpoints (InterruptBefore/InterruptAfter, "*" for every
// node) stop a run with an *Interrupted error; a nil input resumes, and new
// input discards the pending tasks, as upstream.
//
// Breakpoints apply per graph, as upstream's interrupt_before does: "*"
// and plain names never reach into a subgraph, which keeps its own
// compiled breakpoints. Upstream has no way to stop before a node inside
// a subgraph from the parent's call; we add one. A per-run breakpoint
// qualified with the subgraph node's name, "research:plan" (the name the
// Studio's expanded drawing gives the node, and a checkpoint namespace
// without its task id), is passed down to that subgraph's run, in
// addition to its compiled ones; deeper paths ("outer:inner:node") are
// passed down level by level. The run stops as for an interrupt inside
// the subgraph, and *Interrupted.Before/After name the node qualified
// the same way. Compiled breakpoints stay plain node names.
//
// A step's tasks save their writes as they finish, and the step's
// checkpoint comes after. A process that stops in between leaves a head
// checkpoint whose tasks all have saved writes. Upstream's snapshot then
// lists no next task, and a client that stops on an empty Next abandons a
// thread that is not finished. Ours keeps Next as upstream has it and adds
// StateSnapshot.WritesPending (the head's step ran in full, its checkpoint
// is missing) with NextAfterWrites (the step those writes lead to). A run
// with a nil input applies the saved writes without running their tasks
// again and goes on; the Studio shows such a thread as "resume needed".
//
// # Events and streaming
//
// RunOptions.Listener receives typed events: RunStarted, StepPlanned (each
// task with its triggers), TaskStarted, TaskRetried (attempt, error,
// backoff), TaskFinished (writes, duration, cached), TaskFailed,
// BarrierApplied (each channel's old → new version), CheckpointSaved (with
// the next tasks), CheckpointLoaded (the checkpoint a resumed run goes on
// from, reported again before anything runs, as upstream's first tick
// does), Custom (Emit from a node) and RunFinished. Nothing is
// built when no listener is set. Stream yields upstream's stream modes —
// values, updates, tasks, checkpoints, debug, custom — as projections of
// those events, with upstream's payload shapes; "messages" carries the
// chunks a node streams with EmitMessageChunk, then the messages nodes
// write that were neither in a task's input nor streamed (a message is a
// value with a MessageID method; one with a WithMissingID method, as
// models.Message, gets its id when it is written, before it is streamed
// or saved, as upstream's ensure_message_ids). A subgraph's parts come
// only with RunOptions.Subgraphs, each under its namespace. A low-level
// graph streams its stream channels (every channel by default, as
// upstream; its output channels only shape Invoke's result). Upstream
// tells channels given as one name (raw values) from a list of names
// (maps keyed by channel); Go has only the list, so one StreamChannels
// entry streams raw values, as one output channel makes Invoke return a
// raw value.
//
// # Performance
//
// The loop's cost per superstep is what a graph pays on every step, so:
// the tasks of a step run from a shared queue that the loop's own
// goroutine helps drain, waking one helper at a time (a step of tiny nodes
// costs a wake-up, while blocking nodes still all run at once); the typed
// state is built once per step and shared by the step's nodes, refreshed
// in place field by field as channels change, with fields of common types
// set without reflection; writers pass channel indexes with their writes;
// a finished run leaves its tasks, buffers and emptied channels to the
// next run of the same graph; task contexts are allocated in blocks (each
// still used once, as a node may keep its context); a step's write
// buffers are reused once the saver has the step (in async durability,
// once the loop has copied them for the save in the background); small
// JSON values are encoded and checked without
// encoding/json's reflection and scanner; and a checkpoint is lent to a
// checkpoints.FrameSaver (the memory and Postgres savers) as a Frame —
// versions by channel index in the graph's own name table, built in the
// same buffers every step when the save returns before the loop goes on
// (the saver copies what it keeps), and in the buffers of saves that have
// returned when it runs in the background — instead of the maps of a
// Checkpoint, which other savers get. Set writes one key without
// building a map, which in a hot loop is most of a node's cost, but Go
// still boxes the KV into Output; a Writes node (AddNodeWrites) writes
// into the task's reused buffer instead, and its Writes is the task
// context's own task pointer when the node cannot retry, so the node
// pays only for boxing its values into any (an int above 255), which
// BenchmarkLoop1000 reports apart from the engine's own allocations. A
// router sees the node's writes set straight into a copy of the step's
// state. The benchmarks in bench_test.go (BenchmarkLoop1000 with its Set
// and map forms, BenchmarkFanOut100, BenchmarkSend100, BenchmarkChain10,
// BenchmarkLoop1000Checkpointed) track these.
//
// # Where we differ from upstream on purpose
//
//   - Successful writes are cached even when run synchronously, and only
//     successful writes (upstream's sync loop also caches failures).
//   - A fork keeps its subgraphs' state (upstream restarts them,
//     langchain-ai/langgraph#8458): a time-travel fork, a copy (AsCopy)
//     and an UpdateState checkpoint each copy, when made, the latest
//     checkpoint of every subgraph task's namespace into the namespace the
//     same task has under the new checkpoint (engine/carry.go), so the
//     state follows any chain of forks.
//   - Several interrupts in one node have distinct ids (upstream's share
//     one, a hash of the task's namespace), and an unknown state key in
//     an update is an error that names it, not a silently dropped write.
//   - Cached tasks get a TaskFinished event (upstream sends no task result).
//   - Channels check value types; a wrong type is an error at the write,
//     not a corrupt checkpoint later.
//   - A head snapshot whose step saved every write but not its checkpoint
//     says so (WritesPending, NextAfterWrites) instead of looking finished.
//   - A snapshot's Values is always a map keyed by channel; upstream's
//     holds the raw value when stream_channels is one name.
//   - DefaultRetryOn classifies an error carrying an HTTP status as
//     upstream does for httpx/requests errors (5xx retried, other 4xx
//     not), but also retries 408 and 429, and a Retry-After the error
//     carries sets the wait (upstream retries neither and ignores it).
package engine

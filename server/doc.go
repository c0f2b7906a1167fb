// Package server serves the LangGraph Agent Server HTTP API (JSON and
// server-sent events) over the Studio's run manager, checkpointers and
// store, so the official SDKs (@langchain/langgraph-sdk, langgraph-sdk),
// useStream, chat UIs and LangGraph Studio talk to Superstep unchanged.
// The wire rules, object shapes and endpoints follow the specification in
// the repository's reference notes (Agent Server API); where the Python
// platform and the JS reference server differ, the choices are listed
// below.
//
// # One router, two audiences
//
// The API's paths overlap the Studio's pages: GET /threads/{id} is a page
// for a person and a Thread object for the SDK, and so is GET
// /store/items. Mounted under a prefix (studio.Config.APIPrefix), the API has its
// own subtree and nothing overlaps. Mounted at the root, the default, as
// the SDKs expect, Negotiate decides in one place which of the two
// routers answers a request:
//
//   - A request only one router has a route for goes to that router.
//   - A request both have a route for goes to the pages when it is a
//     page request (see handlers.WantsPage: a browser navigation accepts
//     text/html, a Studio form posts a form body, a websocket upgrades),
//     and to the API otherwise. The SDKs send Accept: */* (JS) or
//     application/json / text/event-stream (Python), and JSON bodies
//     (LangGraph Studio sends them as text/plain).
//   - A request neither knows gets the 404 of its audience: a page, or
//     {"detail": ...}.
//
// TestNoRouteShadowsAnother walks every registered route of both routers
// and checks each is reached by its audience.
//
// # Wire rules
//
// Every 200 has a JSON body; deletes answer 204, cancel 202 or 204.
// Errors are {"detail": "..."} (FastAPI's shape, as the Python platform),
// with 422 for a body or parameter that is wrong, naming the field; 404
// for an unknown assistant, thread, run or checkpoint; 409 for a conflict
// (a busy thread under multitask_strategy "reject", an existing thread
// with if_exists "raise"). The SDK retries every other failure, including
// 5xx, so no 5xx is ever returned once a run was persisted: a failure
// after that point is reported in the run (its status and error) or in
// the stream, never as a status that makes the client create it again.
//
// # Decisions where upstream servers differ
//
//   - A rejected multitask answers 409 (Python platform), not 422 (JS).
//   - The default multitask_strategy is "enqueue" (the OpenAPI default).
//   - on_disconnect defaults to "cancel" for /runs/stream and to
//     "continue" for background runs and joins.
//   - History's "before" is accepted as a checkpoint id string, a flat
//     {checkpoint_id, checkpoint_ns} and {configurable: {...}}.
//   - xray is a boolean or a depth.
//   - GET /store/items for a missing item answers 200 with JSON null.
//   - No "end" event closes /runs/stream (the JS server sends none; the
//     Python SDK also stops when the connection closes).
//   - A run that stopped at an interrupt or a breakpoint ends "success"
//     (its thread is "interrupted"), as upstream's workers report it; a
//     cancelled run, or a queued one cancelled before it started, is
//     "interrupted".
//   - A resume map is read by id when every key looks like an interrupt
//     id (as upstream tells one from a value); an id that is not pending
//     is a 422.
//
// # Where Superstep differs on purpose
//
//   - Thread ids are what the Studio accepts (every UUID, and letters,
//     digits, '.', '_', '-'), so a thread started from the Studio's pages
//     is an API thread too. Run and checkpoint ids are UUIDs.
//   - A thread runs one graph for life: a run of another graph's
//     assistant on it is a 409 naming both (upstream would load one
//     graph's checkpoint into another's state).
//   - Every run saves each step before the next starts (durability
//     "sync"): the Studio's live view and crash safety rely on it, so
//     "async" and "exit" are accepted and get the stronger guarantee.
//   - A background run's Run object is the run as it stands when the
//     answer is written: a quick run may already read "success".
//   - config.configurable, context and tags (an assistant's or a run's)
//     are kept and returned but do not reach the graph: the engine has no
//     run configuration; recursion_limit is the one setting that applies.
//   - Input keys that are not state keys are a 422 naming the key (the
//     engine refuses unknown keys; upstream drops them silently), checked
//     when the run is created, also for runs that wait in a queue.
//   - Thread TTLs are refused (422). Crons are served (crons.go): 5-field
//     cron schedules in UTC; with a database they fire once across
//     replicas from river's periodic job.
//   - Stream modes are values, updates, debug, tasks, checkpoints, custom
//     and messages-tuple; "events" (LangChain callbacks) and the legacy
//     "messages" are refused with a 422 naming the supported ones.
//   - Runs waiting in a thread's queue (enqueue, after_seconds) are, with
//     a durable run manager (a database), pending runs of its queue that
//     any replica starts (pending.go); without one they live in the
//     serving process until they start, and a restart drops them.
//   - Webhooks go only to allow-listed hosts (Config.WebhookHosts).
package server

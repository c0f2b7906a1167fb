// Package engine is Superstep's graph runtime: LangGraph's Pregel/BSP
// semantics in Go.
//
// # What belongs here
//
// Channels and their update/consume/finish rules, the superstep loop
// (planning, parallel task execution, the barrier that applies writes in a
// deterministic order, versions and triggers), the low-level Pregel API and
// the typed StateGraph builder that compiles to it, Send and Command,
// interrupts and resume, retry and node-cache policies, the typed event
// model that the Studio streams, topology lint, and the time-travel API
// (state, history, update, fork, replay) on a compiled graph.
//
// # What does not
//
// Anything that talks to a database, HTTP, or renders HTML. Persistence is
// reached only through the interfaces in the checkpoints, store and cache
// packages; the Postgres implementations live in their own sub-packages so
// that importing engine never pulls in a driver.
package engine

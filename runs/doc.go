// Package runs manages runs of registered graphs for the Studio: starting,
// cancelling, resuming and forking runs, one active run per thread, and
// fanning each run's events out to every subscriber (every open browser tab
// of the thread).
//
// It sits between the HTTP layer and the engine: it knows compiled graphs
// and savers, never HTTP requests, templates or SQL.
package runs

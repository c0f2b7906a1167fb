// Package handlers holds the Studio's HTTP, websocket and SSE endpoints:
// request validation, view-models, and the choice of status codes.
//
// Each handler is a struct with exported dependencies, each dependency a
// small interface declared next to the handler. Handlers contain no SQL and
// no engine internals; they talk to runs, savers, the store and the cache,
// and render with the components in package web.
package handlers

// Package web holds the Studio's templ components: pure functions of the
// view-models built by package handlers. Generated *_templ.go files are
// committed; `make generate` rebuilds them and CI fails when they are stale.
//
// Components never read state themselves, never emit raw HTML taken from
// graph state, and never reach a database.
package web

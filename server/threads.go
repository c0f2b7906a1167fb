package server

import "github.com/go-chi/chi/v5"

func (a *API) mountThreads(r chi.Router) { a.mountState(r) }

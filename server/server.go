package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/cors"

	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/store"
)

// Version is the API version /info reports: the Agent Server API this
// package follows (LangGraph Studio checks for a recent one).
const Version = "0.4.0"

// Config is what an API serves and how.
type Config struct {
	// Runs is the run manager the Studio's pages use too: a run started
	// through the API shows live on the thread page, and the other way
	// round.
	Runs *runs.Manager
	// Assistants keeps the assistants /assistants serves; nil keeps them
	// in memory. Each registered graph's own assistant is stored when the
	// API is built.
	Assistants runs.AssistantStore
	// Store backs /store; nil answers those routes 404.
	Store store.Store
	// Token, when set, is required on every route but /ok, as
	// `x-api-key: <token>` (the SDKs' header) or `Authorization: Bearer
	// <token>`: the Studio's own token.
	Token string
	// CORSOrigins are the browser origins allowed to call the API from
	// another site (hosted LangGraph Studio: "https://smith.langchain.com");
	// "*" allows any. Empty allows none: same-origin only.
	CORSOrigins []string
	// WebhookHosts are the hosts a run's webhook may call ("hooks.example.com",
	// or "*.example.com" for its subdomains); empty refuses every webhook.
	WebhookHosts []string
	// Logger receives server-side failures; default slog.Default().
	Logger *slog.Logger
	// Crons keeps the crons /runs/crons serves; nil keeps them in memory.
	Crons runs.CronStore
	// CronJobs, when set, fires the crons from river (once across the
	// replicas sharing its database); nil fires them from a ticker in
	// this process.
	CronJobs *CronJobs
}

// API is the Agent Server API over one run manager and store.
type API struct {
	cfg    Config
	log    *slog.Logger
	router *chi.Mux
	h      http.Handler
	// queue holds the runs waiting for their thread (runs.go), unless
	// the run manager is durable; watching are those of its queue that
	// callers here wait on (pending.go).
	queue    queues
	watching watchers
	// stateless maps stateless runs to their threads (stateless.go).
	stateless statelessRuns
	// done is closed by Close: queued runs no longer start.
	done      chan struct{}
	closeOnce sync.Once
	// crons, clock and cronTickerOff: crons.go.
	crons         runs.CronStore
	clock         atomic.Pointer[func() time.Time]
	cronTickerOff atomic.Bool
}

// Close stops starting queued runs (they end as not started). Runs that
// already started belong to the run manager, which the caller closes.
func (a *API) Close() { a.closeOnce.Do(func() { close(a.done) }) }

// untilClosed is a context for the API's own background work: it ends
// when the API closes, or when cancel is called.
func (a *API) untilClosed() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-a.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// New builds the API.
func New(cfg Config) (*API, error) {
	if cfg.Runs == nil {
		return nil, errors.New("server: Config.Runs is required")
	}
	for _, o := range cfg.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return nil, fmt.Errorf("server: CORS origin %q: want a scheme and host, as https://smith.langchain.com, or *", o)
		}
	}
	if cfg.Assistants == nil {
		cfg.Assistants = runs.NewMemoryAssistants()
	}
	if cfg.Crons == nil {
		cfg.Crons = runs.NewMemoryCrons()
	}
	a := &API{cfg: cfg, log: cfg.Logger, done: make(chan struct{}), crons: cfg.Crons}
	if a.log == nil {
		a.log = slog.Default()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.ensureSystemAssistants(ctx); err != nil {
		return nil, err
	}
	r := chi.NewRouter()
	r.Get("/ok", a.ok)
	r.Get("/info", a.info)
	a.mountAssistants(r)
	a.mountThreads(r)
	a.mountRuns(r)
	a.mountCrons(r)
	a.mountStateless(r)
	a.mountStore(r)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		fail(w, r, a.log, notFound("no API route %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		fail(w, r, a.log, &apiError{http.StatusMethodNotAllowed, fmt.Sprintf("%s %s is not allowed; allowed: %s", r.Method, r.URL.Path, w.Header().Get("Allow"))})
	})
	a.router = r
	a.h = a.guard(r)
	if cfg.CronJobs != nil {
		cfg.CronJobs.bind(a)
	} else {
		go a.runCronTicker()
	}
	return a, nil
}

// Handler serves the API: its routes behind CORS, the token, a body cap
// and cross-origin protection.
func (a *API) Handler() http.Handler { return a.h }

// Routes is the API's router, for Negotiate and for route listings.
func (a *API) Routes() *chi.Mux { return a.router }

// guard wraps the routes: panics become a logged 500 (never before a run
// is persisted: handlers do not panic by design); CORS answers
// preflights and marks allowed origins; cross-origin protection refuses
// a state change from a browser on any other site (a page elsewhere could
// otherwise post text/plain JSON to a local Superstep without a
// preflight); the token is checked; bodies are capped.
func (a *API) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range a.cfg.CORSOrigins {
		if o != "*" {
			if err := cop.AddTrustedOrigin(o); err != nil {
				a.log.Error("api: CORS origin", slog.String("origin", o), slog.Any("error", err))
			}
		}
	}
	allowAll := false
	for _, o := range a.cfg.CORSOrigins {
		allowAll = allowAll || o == "*"
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail(w, r, a.log, &apiError{http.StatusForbidden, "cross-origin request refused: add the page's origin to the API's CORS origins"})
	}))
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
	h = a.requireToken(h)
	if !allowAll {
		h = cop.Handler(h)
	}
	if len(a.cfg.CORSOrigins) > 0 {
		h = cors.Handler(cors.Options{
			AllowedOrigins: a.cfg.CORSOrigins,
			AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead},
			AllowedHeaders: []string{"*"},
			ExposedHeaders: []string{"Content-Location", "Location", "X-Pagination-Next", "X-Pagination-Total"},
			MaxAge:         600,
		})(h)
	}
	return middleware.Recoverer(h)
}

// crossSite reports whether r comes from a page on another site that is
// not one of the allowed CORS origins.
func (a *API) crossSite(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") != "cross-site" {
		return false
	}
	origin := r.Header.Get("Origin")
	for _, o := range a.cfg.CORSOrigins {
		if o == "*" || o == origin {
			return false
		}
	}
	return true
}

// requireToken checks the Studio's token on every route but /ok (a load
// balancer's probe), compared in constant time. The SDKs send it as
// x-api-key.
func (a *API) requireToken(next http.Handler) http.Handler {
	if a.cfg.Token == "" {
		return next
	}
	want := sha256.Sum256([]byte(a.cfg.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("X-Api-Key")
		if got == "" {
			if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
				got = strings.TrimSpace(tok)
			}
		}
		g := sha256.Sum256([]byte(got))
		if r.URL.Path == "/ok" || (got != "" && subtle.ConstantTimeCompare(g[:], want[:]) == 1) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="Superstep"`)
		msg := "missing API key: send the Studio's token as x-api-key"
		if got != "" {
			msg = "wrong API key: it is not the Studio's token"
		}
		fail(w, r, a.log, &apiError{http.StatusUnauthorized, msg})
	})
}

func (a *API) ok(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// info says what this server supports, as LangGraph Studio reads it.
func (a *API) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": Version,
		"flags": map[string]bool{
			"assistants": true,
			"crons":      true,
			"langsmith":  false,
			"store":      a.cfg.Store != nil,
		},
		"metadata": map[string]any{"server": "superstep"},
	})
}

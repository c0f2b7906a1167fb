package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/go-chi/chi/v5"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/web"
)

// Runner is what the Studio's pages need from the run manager
// (*runs.Manager implements it).
type Runner interface {
	GraphNames() []string
	Graph(name string) (engine.Compiled, error)
	// ListThreads and Thread read the thread registry: the request's
	// context bounds them, so a client that goes away stops the read.
	ListThreads(ctx context.Context, f runs.ThreadFilter) ([]runs.Thread, error)
	Thread(ctx context.Context, id string) (runs.Thread, error)
	Start(ctx context.Context, graph, thread string, input map[string]any, opts runs.StartOptions) (runs.Thread, error)
	Resume(ctx context.Context, thread string, answer any) (runs.Thread, error)
	// ResumeWith is Resume that records where the answer came from.
	ResumeWith(ctx context.Context, thread string, answer any, opts *runs.ResumeOptions) (runs.Thread, error)
	Cancel(ctx context.Context, thread string) error
	Subscribe(ctx context.Context, thread string) ([]runs.Event, *runs.Subscription, error)
	// Time travel (checkpoints.go).
	Checkpoint(ctx context.Context, thread, checkpointID string) (*checkpoints.Tuple, error)
	UpdateState(ctx context.Context, thread, checkpointID string, values map[string]any, asNode string) (string, error)
	RunFrom(ctx context.Context, thread, checkpointID string) (runs.Thread, error)
}

var _ Runner = (*runs.Manager)(nil)

// MaxBodyBytes caps a request body. The biggest legitimate body is a
// start-run form with its input JSON.
const MaxBodyBytes = web.MaxBodyBytes

// Routes are the Studio's graph, thread and live pages over one Runner.
type Routes struct {
	Runs Runner
	// Store and Cache back the store and cache pages; nil hides them.
	Store store.Store
	Cache cache.Cache
	// PromptCache reads the model-call records of a thread for its
	// prompt-cache panel (a *promptcache.Cache on the graphs' store); nil
	// shows no panel.
	PromptCache CallRecords
	Logger      *slog.Logger
	// OriginPatterns are extra hosts allowed to open the websocket (the
	// Studio's own host always is); see websocket.AcceptOptions.
	OriginPatterns []string
	// Sockets bound the live websockets; the zero value gives the
	// defaults (see SocketLimits).
	Sockets SocketLimits
	// Inputs are example run inputs by graph name: the graph's start form
	// is prefilled with its input, and a "Try it" button runs it at once.
	// A graph without one gets its zero state in the form.
	Inputs map[string]map[string]any
}

// Mount adds the routes to r. State changes are POSTs (never GETs), so
// Secure's cross-origin protection covers every one of them.
func (rt Routes) Mount(r chi.Router) {
	r.Method(http.MethodGet, "/graphs", GraphList(rt))
	r.Method(http.MethodGet, "/graphs/{graph}", GraphPage(rt))
	r.Method(http.MethodPost, "/graphs/{graph}/runs", StartRun(rt))
	r.Method(http.MethodGet, "/threads", ThreadList(rt))
	r.Method(http.MethodGet, "/threads/{thread}", ThreadPage(rt))
	r.Method(http.MethodGet, "/threads/{thread}/ws", ThreadEvents(rt))
	r.Method(http.MethodGet, "/threads/{thread}/promptcache", PromptCacheFragment(rt))
	r.Method(http.MethodPost, "/threads/{thread}/resume", ResumeRun(rt))
	r.Method(http.MethodPost, "/threads/{thread}/cancel", CancelRun(rt))
	r.Method(http.MethodGet, "/graphs/{graph}/nodes/{node}", GraphNodeDetails(rt))
	r.Method(http.MethodGet, "/threads/{thread}/nodes/{node}", ThreadNodeDetails(rt))
	rt.mountTimeTravel(r)
	rt.mountStore(r)
	rt.mountCache(r)
	r.Method(http.MethodGet, "/static/*", staticFiles(rt))
	r.Method(http.MethodGet, "/favicon.ico", favicon())
	r.NotFound(NotFound(rt.Logger).ServeHTTP)
	r.MethodNotAllowed(methodNotAllowed(rt.Logger))
}

// Secure wraps the whole Studio: Go's cross-origin protection on every
// non-safe method (a cross-site form post gets 403 and changes nothing),
// a body size cap, and headers that keep pages from being framed or
// running scripts from anywhere else.
func Secure(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		renderError(w, r, nil, http.StatusForbidden, "Cross-origin request refused",
			"This request came from another site. The Studio only accepts changes made from its own pages.")
	}))
	return cop.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	}))
}

// statusOf maps run-manager and validation errors to status codes.
func statusOf(err error) int {
	switch {
	case errors.Is(err, runs.ErrUnknownGraph), errors.Is(err, runs.ErrUnknownThread), errors.Is(err, runs.ErrUnknownCheckpoint), errors.Is(err, runs.ErrUnknownRun),
		errors.Is(err, ErrUnknownNode):
		return http.StatusNotFound
	case errors.Is(err, runs.ErrThreadBusy), errors.Is(err, runs.ErrNotInterrupted),
		errors.Is(err, runs.ErrNotRunning), errors.Is(err, runs.ErrGraphMismatch), errors.Is(err, ErrNothingToRun), errors.Is(err, runs.ErrThreadExists):
		return http.StatusConflict
	case errors.Is(err, engine.ErrCheckpointMismatch):
		// Stored values another version of the graph saved: nothing the
		// request can change, but worth saying exactly.
		return http.StatusUnprocessableEntity
	case errors.Is(err, runs.ErrInvalidInput), errors.Is(err, ErrBadJSON), errors.Is(err, errBadForm),
		// A value the checkpointer cannot store (a NUL in a string) is the
		// request's fault, not the server's.
		errors.Is(err, checkpoints.ErrInvalidValue):
		return http.StatusBadRequest
	}
	// Store errors that mean "your input was wrong" (the store page).
	for _, bad := range []error{store.ErrInvalidNamespace, store.ErrInvalidKey, store.ErrInvalidValue,
		store.ErrInvalidFilter, store.ErrInvalidPath, store.ErrInvalidOp, store.ErrNoIndex} {
		if errors.Is(err, bad) {
			return http.StatusBadRequest
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

var errBadForm = errors.New("bad form")

func titleOf(code int) string {
	switch code {
	case http.StatusNotFound:
		return "Not found"
	case http.StatusConflict:
		return "Not now"
	case http.StatusRequestEntityTooLarge:
		return "Too large"
	case http.StatusBadRequest:
		return "Cannot do that"
	case http.StatusUnprocessableEntity:
		return "Does not fit the graph"
	}
	return http.StatusText(code)
}

// fail answers err with its status and a page saying what was wrong;
// server-side failures are logged and described vaguely.
func fail(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := statusOf(err)
	msg := err.Error()
	if code == http.StatusRequestEntityTooLarge {
		msg = "The request body is larger than 1 MiB."
	}
	if code >= 500 {
		logger(log).Error("studio request failed", slog.String("path", r.URL.Path), slog.Any("error", err))
		msg = "Something went wrong on the server; the log says what."
	}
	renderError(w, r, log, code, titleOf(code), msg)
}

func renderError(w http.ResponseWriter, r *http.Request, log *slog.Logger, code int, title, msg string) {
	back, label := backLink(r)
	render(w, r, log, code, web.ErrorPage(web.ErrorView{Status: code, Title: title, Message: msg, Back: back, BackLabel: label}))
}

func render(w http.ResponseWriter, r *http.Request, log *slog.Logger, code int, c templ.Component) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if err := c.Render(r.Context(), w); err != nil {
		logger(log).Error("render", slog.String("path", r.URL.Path), slog.Any("error", err))
	}
}

func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05")
}

// parseForm reads a POST form within MaxBodyBytes.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return mbe
		}
		return fmt.Errorf("%w: %v", errBadForm, err)
	}
	return nil
}

// StatusOf is the status the pages answer err with: what the run manager's
// and the store's errors mean for a request (the Agent Server API maps
// errors the same way).
func StatusOf(err error) int { return statusOf(err) }

// WantsPage reports whether r is a person's browser asking for a page
// rather than a program calling the API at the same path: a websocket
// upgrade, a GET or HEAD that accepts text/html (every browser
// navigation does; the SDKs send */* or JSON types), or a form post (the
// Studio's forms; the API takes JSON, also as text/plain).
func WantsPage(r *http.Request) bool {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		for _, a := range r.Header.Values("Accept") {
			if strings.Contains(strings.ToLower(a), "text/html") {
				return true
			}
		}
		return false
	}
	ct := strings.ToLower(r.Header.Get("Content-Type"))
	return strings.HasPrefix(ct, "application/x-www-form-urlencoded") || strings.HasPrefix(ct, "multipart/form-data")
}

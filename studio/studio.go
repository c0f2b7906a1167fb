package studio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/superstep-dev/superstep/cache"
	"github.com/superstep-dev/superstep/cache/pgcache"
	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/checkpoints/pgsaver"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/handlers"
	"github.com/superstep-dev/superstep/migrations"
	"github.com/superstep-dev/superstep/models/promptcache"
	"github.com/superstep-dev/superstep/runs"
	"github.com/superstep-dev/superstep/runs/pgthreads"
	"github.com/superstep-dev/superstep/runs/riverq"
	"github.com/superstep-dev/superstep/server"
	"github.com/superstep-dev/superstep/store"
	"github.com/superstep-dev/superstep/store/embed"
	"github.com/superstep-dev/superstep/store/pgstore"
)

// Config is everything a program decides about the Studio it serves.
type Config struct {
	// DatabaseURL points at Postgres (pgvector required): checkpoints,
	// the thread registry, store and node cache live there. Empty means
	// in-memory backends: nothing survives a restart.
	DatabaseURL string
	// Addr is the listen address for Serve; default 127.0.0.1:8080.
	Addr string
	// Logger receives the Studio's logs; default slog.Default().
	Logger *slog.Logger
	// Graphs are the graphs the Studio shows and runs, by name (letters,
	// digits, '.', '_', '-'). Each must be compiled with a checkpointer:
	// threads, resume and the live catch-up read checkpoints.
	Graphs map[string]engine.Compiled
	// Build, when set, compiles more graphs against the backends Open
	// creates (Postgres when DatabaseURL is set, memory otherwise), so the
	// graphs' threads, cache and store are the Studio's.
	Build func(Backends) (map[string]engine.Compiled, error)
	// Inputs are example run inputs by graph name (JSON objects keyed by
	// state field): the graph's start form is prefilled with its input and
	// a "Try it" button runs it on a new thread. Graphs without one get
	// their zero state in the form.
	Inputs map[string]map[string]any
	// CacheKey authenticates node-cache rows in Postgres (see package
	// pgcache); replicas sharing a database must share it. Empty means a
	// random key per process: entries written by others are misses.
	CacheKey []byte
	// AuthToken, when set, guards every page, API route and websocket:
	// requests need `Authorization: Bearer <token>` or the cookie the
	// Studio's login form sets (see handlers.RequireToken). Empty means
	// no authentication: keep such a Studio on localhost.
	AuthToken string
	// Sockets bound the Studio's live websockets (per client address, in
	// all, and catch-ups at once); zero values give the defaults of
	// handlers.SocketLimits.
	Sockets handlers.SocketLimits
	// PromptCache configures the prompt-cache layer the Studio opens on
	// its backends (Backends.PromptCache): its Store and Checkpoints are
	// the Studio's (set here, they are replaced), so each thread's
	// latches and model-call records live with the thread, in Postgres
	// when DatabaseURL is set, and the thread page's prompt-cache panel
	// reads them after a restart. Give Prices to see costs and savings.
	PromptCache promptcache.Config
	// Runs tunes durable runs (with DatabaseURL; see package
	// runs/riverq): zero values give the defaults.
	Runs RunsConfig
	// DBRetryWindow is how long a checkpoint, store, node-cache, registry
	// or run-log read or write that met a transient database fault (connection refused or
	// reset, a server restart, a serialization failure) is retried before
	// it fails (and with it the run, for a checkpoint).
	// 0 means pgretry.DefaultWindow (30 s); negative, no retry.
	DBRetryWindow time.Duration
	// APIPrefix is the path the Agent Server API (package server) is
	// served under, e.g. "/api"; empty serves it at the root, beside the
	// pages, as the SDKs expect (server.Negotiate tells a browser's page
	// request from an API call).
	APIPrefix string
	// CORSOrigins are the browser origins allowed to call the API from
	// another site, e.g. "https://smith.langchain.com" for hosted
	// LangGraph Studio; "*" allows any. Empty: same-origin only.
	CORSOrigins []string
	// WebhookHosts are the hosts a run's webhook may call (exact, or
	// "*.example.com"); empty refuses every webhook.
	WebhookHosts []string
}

// Backends are the persistence implementations the Studio runs on.
type Backends struct {
	Checkpointer checkpoints.Saver
	Cache        cache.Cache
	Store        store.Store
	// PromptCache is the prompt-cache layer on Store and Checkpointer:
	// install its Hooks on the graphs' chat models (anthropic.Config or
	// openai.Config .Hooks) and their calls show in the thread page's
	// prompt-cache panel.
	PromptCache *promptcache.Cache
}

// storeIndex is the Studio store's semantic index: the offline embedder
// (real, if weak, semantics; no network), over whole documents.
func storeIndex() *store.IndexConfig {
	return &store.IndexConfig{Embedder: embed.Offline()}
}

// DefaultAddr is where Serve listens when Config.Addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// Studio is an assembled Studio: its backends and its HTTP handler.
type Studio struct {
	backends handlers.Backends
	b        Backends
	pool     *pgxpool.Pool
	closers  []func()
	runs     *runs.Manager
	queue    *riverq.Queue
	grace    time.Duration
	log      *slog.Logger
	handler  http.Handler
	// pages and api are the two routers behind handler.
	pages, api *chi.Mux
}

// Open connects to the configured backends (applying migrations to
// Postgres) and builds the router. Close releases what it opened.
func Open(ctx context.Context, cfg Config) (*Studio, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Studio{backends: handlers.Backends{Checkpoints: "memory", Store: "memory", Cache: "memory"}, log: log}
	var db handlers.Pinger
	var b Backends
	// The thread registry lives with the checkpoints: in Postgres the
	// threads page and resuming an interrupt survive a restart.
	var threads runs.ThreadStore = runs.NewMemoryThreads()
	// The run log keeps what a reloaded thread page shows of past runs
	// (cache hits, cancelled tasks, durations, answers).
	var runLog runs.RunLog = runs.NewMemoryRunLog()
	// The API's assistants and crons (nil: in memory).
	var assistants runs.AssistantStore
	var crons runs.CronStore
	if cfg.DatabaseURL != "" {
		pool, err := pgxpool.New(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("studio: DATABASE_URL: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("studio: cannot reach the database at DATABASE_URL: %w", err)
		}
		if err := migrations.Up(ctx, pool); err != nil {
			pool.Close()
			return nil, fmt.Errorf("studio: %w", err)
		}
		// Health checks get a connection of their own: a pool busy with
		// runs and catch-ups must not make /healthz report the database
		// down.
		hcfg := pool.Config().Copy()
		hcfg.MaxConns, hcfg.MinConns = 1, 0
		health, err := pgxpool.NewWithConfig(ctx, hcfg)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("studio: DATABASE_URL: %w", err)
		}
		s.closers = append(s.closers, health.Close)
		s.pool, db = pool, health
		s.backends = handlers.Backends{Checkpoints: "postgres", Store: "postgres", Cache: "postgres"}
		c, err := pgcache.New(pool, &pgcache.Options{Key: cfg.CacheKey, SweepInterval: time.Minute, RetryWindow: cfg.DBRetryWindow})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("studio: node cache: %w", err)
		}
		st, err := pgstore.New(ctx, pool, pgstore.Options{Options: store.Options{Index: storeIndex()}, RetryWindow: cfg.DBRetryWindow})
		if err != nil {
			_ = c.Close()
			s.Close()
			return nil, fmt.Errorf("studio: store: %w", err)
		}
		s.closers = append(s.closers, func() { _ = c.Close() })
		b = Backends{Checkpointer: pgsaver.New(pool, &pgsaver.Options{RetryWindow: cfg.DBRetryWindow}), Cache: c, Store: st}
		threads = pgthreads.New(pool, pgthreads.WithRetryWindow(cfg.DBRetryWindow))
		runLog = pgthreads.NewRunLog(pool, pgthreads.WithRetryWindow(cfg.DBRetryWindow))
		assistants = pgthreads.NewAssistants(pool, pgthreads.WithRetryWindow(cfg.DBRetryWindow))
		crons = pgthreads.NewCrons(pool, pgthreads.WithRetryWindow(cfg.DBRetryWindow))
	} else {
		st, err := store.NewMemory(store.Options{Index: storeIndex()})
		if err != nil {
			return nil, fmt.Errorf("studio: store: %w", err)
		}
		mc := cache.NewMemory(nil)
		s.closers = append(s.closers, func() { _ = mc.Close() })
		b = Backends{Checkpointer: checkpoints.NewMemory(), Cache: mc, Store: st}
	}
	pcCfg := cfg.PromptCache
	pcCfg.Store, pcCfg.Checkpoints = b.Store, b.Checkpointer
	if pcCfg.OnError == nil {
		pcCfg.OnError = func(err error) { log.Error("prompt cache", slog.Any("error", err)) }
	}
	pc, err := promptcache.New(pcCfg)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("studio: prompt cache: %w", err)
	}
	b.PromptCache = pc
	s.b = b
	// Expired store items are never returned, but only a sweep reclaims
	// them (and their vectors); the cache sweeps itself.
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	go store.RunSweeper(sweepCtx, b.Store, 0, func(err error) {
		log.Error("store sweep", slog.Any("error", err))
	})
	s.closers = append(s.closers, stopSweep)
	graphs := maps.Clone(cfg.Graphs)
	if cfg.Build != nil {
		built, err := cfg.Build(b)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("studio: build graphs: %w", err)
		}
		if graphs == nil {
			graphs = map[string]engine.Compiled{}
		}
		for name, g := range built {
			if _, dup := graphs[name]; dup {
				s.Close()
				return nil, fmt.Errorf("studio: graph %q is registered twice", name)
			}
			graphs[name] = g
		}
	}
	for name := range cfg.Inputs {
		if _, ok := graphs[name]; !ok {
			s.Close()
			return nil, fmt.Errorf("studio: Inputs has an input for %q, which is not one of the graphs", name)
		}
	}
	opts := []runs.ManagerOption{runs.WithThreadStore(threads), runs.WithRunLog(runLog), runs.WithErrorHandler(func(err error) {
		log.Error("thread registry", slog.Any("error", err))
	})}
	var queue *riverq.Queue
	// With a database, crons fire from river: once across the replicas.
	var cronJobs *server.CronJobs
	if s.pool != nil {
		id := cfg.Runs.ID
		if id == "" {
			id = uuid.NewString()
		}
		if cronJobs, err = server.NewCronJobs(s.pool); err != nil {
			s.Close()
			return nil, fmt.Errorf("studio: %w", err)
		}
		queue, err = riverq.New(s.pool, riverq.Config{ID: id, LeaseTTL: cfg.Runs.LeaseTTL, ReapEvery: cfg.Runs.ReapEvery,
			Workers: cfg.Runs.Workers, Logger: log.With(slog.String("component", "river")),
			OnError:    func(err error) { log.Error("run queue", slog.Any("error", err)) },
			AddWorkers: cronJobs.AddWorkers, PeriodicJobs: cronJobs.PeriodicJobs(), Queues: cronJobs.Queues()})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("studio: %w", err)
		}
		events := riverq.NewEventLog(s.pool, func(err error) { log.Error("event log", slog.Any("error", err)) })
		s.closers = append(s.closers, events.Close)
		opts = append(opts, runs.WithQueue(queue), runs.WithRenewEvery(cfg.Runs.RenewEvery), runs.WithEventLog(events))
	}
	mgr, err := runs.NewManager(graphs, opts...)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("studio: %w", err)
	}
	if queue != nil {
		if err := queue.Start(ctx, mgr); err != nil {
			mgr.Close()
			s.Close()
			return nil, fmt.Errorf("studio: %w", err)
		}
		s.queue, s.grace = queue, cfg.Runs.ShutdownGrace
	}

	s.runs = mgr
	api, err := server.New(server.Config{Runs: mgr, Assistants: assistants, Store: b.Store, Token: cfg.AuthToken, CORSOrigins: cfg.CORSOrigins, WebhookHosts: cfg.WebhookHosts, Logger: log,
		Crons: crons, CronJobs: cronJobs})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("studio: %w", err)
	}
	r := chi.NewRouter()
	r.Use(middleware.Recoverer)
	health := handlers.Health{Backends: s.backends, DB: pingOrNil(db), Logger: log}
	if queue != nil {
		health.Queue = func(ctx context.Context) (any, error) { return queue.Stats(ctx) }
	}
	r.Method(http.MethodGet, "/healthz", health)
	r.Method(http.MethodGet, "/", handlers.Index{Backends: s.backends, Logger: log})
	handlers.Routes{Runs: mgr, Store: b.Store, Cache: b.Cache, PromptCache: b.PromptCache, Logger: log, Sockets: cfg.Sockets, Inputs: cfg.Inputs}.Mount(r)
	pages := handlers.Secure(handlers.RequireToken(cfg.AuthToken, r))
	s.pages, s.api = r, api.Routes()
	s.closers = append([]func(){api.Close}, s.closers...)
	switch prefix := strings.TrimRight(cfg.APIPrefix, "/"); {
	case prefix == "":
		s.handler = server.Negotiate(pages, api.Handler(), r, api.Routes())
	case !strings.HasPrefix(prefix, "/"):
		s.Close()
		return nil, fmt.Errorf("studio: APIPrefix %q: want a path that starts with /, as /api", cfg.APIPrefix)
	default:
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", http.StripPrefix(prefix, api.Handler()))
		mux.Handle("/", pages)
		s.handler = mux
	}
	return s, nil
}

// RunsConfig tunes durable runs. With a database every run is claimed in
// Postgres with a lease this process renews; when a process dies (or
// stalls past LeaseTTL) another one sharing the database takes its runs
// over and continues them from their last checkpoints.
type RunsConfig struct {
	// ID names this process among the replicas (default: a fresh
	// uuid); it shows in /healthz.
	ID string
	// LeaseTTL is how long a silent process keeps its runs (default
	// riverq.DefaultLeaseTTL); RenewEvery how often it renews them, and
	// notices a cancel asked in another process (default
	// runs.DefaultRenewEvery); ReapEvery how often it looks for
	// expired leases (default riverq.DefaultReapEvery).
	LeaseTTL, RenewEvery, ReapEvery time.Duration
	// Workers caps the runs this process takes over at once (default
	// riverq.DefaultWorkers).
	Workers int
	// ShutdownGrace is how long Close lets the runs this process
	// executes finish before it hands the rest back to other processes
	// (0: hand them back at once). New runs are refused meanwhile.
	ShutdownGrace time.Duration
}

// shutdownGrace bounds how long Close waits for river to stop once the
// runs are handed back (after RunsConfig.ShutdownGrace).
const shutdownGrace = 10 * time.Second

// Routers are the Studio's two routers: its pages and the Agent Server
// API (for route listings and tests).
func (s *Studio) Routers() (pages, api *chi.Mux) { return s.pages, s.api }

// Backends reports the implementation behind each persistence interface.
func (s *Studio) Backends() handlers.Backends { return s.backends }

// Handler is the Studio's HTTP handler.
func (s *Studio) Handler() http.Handler { return s.handler }

// Runs is the run manager behind the pages.
func (s *Studio) Runs() *runs.Manager { return s.runs }

// Persistence returns the backends graphs run on.
func (s *Studio) Persistence() Backends { return s.b }

// Close cancels active runs and releases the backends and the database
// pool, if any.
//
// With a database, the runs this process executes get
// RunsConfig.ShutdownGrace to finish, then those still going are handed
// back for other processes sharing the database to continue at once (a
// Studio stopping is not a run failing); the hand-back waits at most
// shutdownGrace for river to stop.
func (s *Studio) Close() {
	switch {
	case s.queue != nil:
		ctx, cancel := context.WithTimeout(context.Background(), s.grace+shutdownGrace)
		if err := s.queue.Shutdown(ctx, s.runs, s.grace); err != nil {
			s.log.Error("stop the run queue", slog.Any("error", err))
		}
		cancel()
	case s.runs != nil:
		s.runs.Close()
	}
	for _, c := range s.closers {
		c()
	}
	if s.pool != nil {
		s.pool.Close()
	}
}

// Serve opens the Studio and serves it on cfg.Addr until ctx is done, then
// shuts down gracefully. ready, when non-nil, is called with the bound
// address once the listener is open.
func Serve(ctx context.Context, cfg Config, ready func(addr net.Addr)) error {
	s, err := Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("studio: listen on %s: %w", addr, err)
	}
	if ready != nil {
		ready(ln.Addr())
	}
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("studio: serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("studio: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("studio: serve: %w", err)
	}
	return nil
}

// pingOrNil caches the health check's database pings for a second (see
// handlers.CachedPing), or is nil without a database.
func pingOrNil(db handlers.Pinger) handlers.Pinger {
	if db == nil {
		return nil
	}
	return handlers.CachedPing(db, time.Second)
}

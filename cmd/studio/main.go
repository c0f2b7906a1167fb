// Command studio serves Superstep Studio.
//
// Configuration comes from flags, each mirroring an environment variable
// (the flag wins when both are set):
//
//	-addr          STUDIO_ADDR    listen address (default 127.0.0.1:8080)
//	-database-url  DATABASE_URL   Postgres with pgvector; empty = in-memory backends
//	-auth-token    STUDIO_AUTH_TOKEN  bearer token guarding every page, API and
//	                              websocket; empty = no authentication. Prefer the
//	                              environment variable: flags show up in ps.
//
// The examples built on a chat model (cve-agent) use the model
// modelenv.Load picks: ANTHROPIC_API_KEY, else OPENAI_API_KEY or
// OPENAI_BASE_URL, else the offline model; SUPERSTEP_MODEL names it. The
// offline model runs with the Studio's prompt-cache layer, so a thread's
// page shows its model calls, cache reads, breaks and savings (priced as
// Claude Sonnet).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/superstep-dev/superstep/checkpoints"
	"github.com/superstep-dev/superstep/engine"
	"github.com/superstep-dev/superstep/examples"
	"github.com/superstep-dev/superstep/models"
	"github.com/superstep-dev/superstep/models/localprovider"
	"github.com/superstep-dev/superstep/models/modelenv"
	"github.com/superstep-dev/superstep/studio"
)

func main() {
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.DatabaseURL == "" {
		fmt.Fprint(os.Stderr, memoryBanner)
	}
	model, err := modelenv.Load(modelConfig(models.Hooks{}))
	if err != nil {
		slog.Error("no chat model", slog.Any("error", err))
		os.Exit(2)
	}
	slog.Info("chat model for the examples", slog.String("model", modelenv.Describe(model)))
	cfg.Build = graphs(modelConfig)
	cfg.Inputs = inputs()
	cfg.PromptCache = promptCacheConfig()
	err = studio.Serve(ctx, cfg, func(addr net.Addr) {
		slog.Info("Superstep Studio is listening", slog.String("url", "http://"+addr.String()))
	})
	if err != nil {
		slog.Error("studio stopped", slog.Any("error", err))
		os.Exit(1)
	}
}

const memoryBanner = `
  ┌──────────────────────────────────────────────────────────────────────┐
  │ Superstep Studio is running on IN-MEMORY backends.                   │
  │ Checkpoints, the store and the node cache are lost when it stops.    │
  │ To keep them, set DATABASE_URL (or -database-url) to a Postgres      │
  │ database with pgvector; 'make run' starts a local one for you.       │
  └──────────────────────────────────────────────────────────────────────┘

`

// parseConfig reads flags, falling back to environment variables.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (studio.Config, error) {
	fs := flag.NewFlagSet("studio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg studio.Config
	cfg.Runs.ShutdownGrace = defaultShutdownGrace
	fs.StringVar(&cfg.Addr, "addr", envOr(getenv, "STUDIO_ADDR", studio.DefaultAddr), "listen address (env STUDIO_ADDR)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres URL; empty = in-memory backends (env DATABASE_URL)")
	fs.StringVar(&cfg.AuthToken, "auth-token", getenv("STUDIO_AUTH_TOKEN"), "bearer token required by every page, API and websocket; empty = none (env STUDIO_AUTH_TOKEN)")
	fs.StringVar(&cfg.APIPrefix, "api-prefix", getenv("STUDIO_API_PREFIX"), "path the Agent Server API is served under, e.g. /api; empty = the root, beside the pages (env STUDIO_API_PREFIX)")
	cors := getenv("STUDIO_CORS_ORIGINS")
	fs.StringVar(&cors, "cors-origins", cors, "comma-separated browser origins allowed to call the API, e.g. https://smith.langchain.com for LangGraph Studio (env STUDIO_CORS_ORIGINS)")
	hooks := getenv("STUDIO_WEBHOOK_HOSTS")
	fs.StringVar(&hooks, "webhook-hosts", hooks, "comma-separated hosts run webhooks may call (exact, or *.example.com); empty = no webhooks (env STUDIO_WEBHOOK_HOSTS)")
	window := envOr(getenv, "STUDIO_DB_RETRY_WINDOW", "30s")
	fs.Func("db-retry-window", "how long a checkpoint read or write retries a transient database fault before the run fails; 0 = no retry (env STUDIO_DB_RETRY_WINDOW, default 30s)", func(v string) error {
		window = v
		return nil
	})
	fs.StringVar(&cfg.Runs.ID, "replica-id", getenv("STUDIO_REPLICA_ID"), "this process's name among replicas sharing the database; empty = a fresh uuid (env STUDIO_REPLICA_ID)")
	for _, d := range []struct {
		flag, env, usage string
		dst              *time.Duration
		zeroOK           bool
	}{
		{"lease-ttl", "STUDIO_LEASE_TTL", "how long a silent replica keeps its runs before another takes them over (default 10s)", &cfg.Runs.LeaseTTL, false},
		{"lease-renew", "STUDIO_LEASE_RENEW", "how often a replica renews its runs' leases and notices cancels from other replicas (default 500ms)", &cfg.Runs.RenewEvery, false},
		{"reap-every", "STUDIO_REAP_EVERY", "how often a replica looks for runs whose replica died (default 500ms)", &cfg.Runs.ReapEvery, false},
		{"shutdown-grace", "STUDIO_SHUTDOWN_GRACE", "how long a stopping replica lets its runs finish before handing the rest to other replicas; 0 hands them back at once (default 10s)", &cfg.Runs.ShutdownGrace, true},
	} {
		v := getenv(d.env)
		fs.Func(d.flag, d.usage+" (env "+d.env+")", func(s string) error { v = s; return parseDuration(d.flag, s, d.dst, d.zeroOK) })
		if v != "" {
			if err := parseDuration(d.env, v, d.dst, d.zeroOK); err != nil {
				fmt.Fprintln(stderr, "studio:", err)
				return cfg, err
			}
		}
	}
	workers := 0
	if v := getenv("STUDIO_RUN_WORKERS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			err = fmt.Errorf("STUDIO_RUN_WORKERS %q: use a whole number (0 for the default, 32)", v)
			fmt.Fprintln(stderr, "studio:", err)
			return cfg, err
		}
		workers = n
	}
	fs.IntVar(&cfg.Runs.Workers, "run-workers", workers, "how many runs of dead replicas this replica takes over at once; 0 = the default, 32 (env STUDIO_RUN_WORKERS)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.CORSOrigins, cfg.WebhookHosts = splitList(cors), splitList(hooks)
	d, err := time.ParseDuration(window)
	if err != nil || d < 0 {
		return cfg, fmt.Errorf("db retry window %q: use a duration such as 30s or 2m (0 for no retry)", window)
	}
	cfg.DBRetryWindow = d
	if d == 0 {
		cfg.DBRetryWindow = -1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "studio: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return cfg, fmt.Errorf("unexpected arguments")
	}
	return cfg, nil
}

// parseDuration reads a positive duration setting (or 0, with zeroOK).
func parseDuration(name, v string, dst *time.Duration, zeroOK bool) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		return fmt.Errorf("%s %q: use a positive duration such as 500ms or 10s", name, v)
	}
	*dst = d
	return nil
}

// defaultShutdownGrace is how long a stopping Studio lets its runs finish
// before handing the rest to other replicas.
const defaultShutdownGrace = 10 * time.Second

// splitList reads a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// reviewState is the demo graph's state.
type reviewState struct {
	Topic    string   `json:"topic"`
	Notes    []string `json:"notes" reduce:"append"`
	Draft    string   `json:"draft"`
	Approved bool     `json:"approved"`
	Rounds   int      `json:"rounds"`
}

var errFlaky = errors.New("search service busy (demo: fails on the first attempt)")

// modelConfig is how the Studio picks the examples' chat model
// (modelenv: a provider from the environment, else the offline model)
// with hooks installed on it.
func modelConfig(hooks models.Hooks) modelenv.Config {
	return modelenv.Config{Respond: examples.Respond, Hooks: hooks,
		Double: localprovider.Config{CacheMinTokens: map[string]int{modelenv.OfflineModel: offlineMinTokens}}}
}

// graphs registers every example graph, and the demo, on the Studio's
// backends, the examples built on the chat model modelenv picks with
// the Studio's prompt-cache hooks installed, so the thread page's
// prompt-cache panel shows its calls (a real provider's as well as the
// offline model's).
func graphs(config func(models.Hooks) modelenv.Config) func(studio.Backends) (map[string]engine.Compiled, error) {
	return func(b studio.Backends) (map[string]engine.Compiled, error) {
		var hooks models.Hooks
		if b.PromptCache != nil {
			hooks = b.PromptCache.Hooks()
		}
		model, err := modelenv.Load(config(hooks))
		if err != nil {
			return nil, err
		}
		all, err := examples.All(examples.Options{Checkpointer: b.Checkpointer, Cache: b.Cache, Store: b.Store, Model: model})
		if err != nil {
			return nil, err
		}
		demo, err := demoGraph(b.Checkpointer)
		if err != nil {
			return nil, err
		}
		all["demo-review"] = demo
		return all, nil
	}
}

// inputs are the example inputs of every graph graphs registers.
func inputs() map[string]map[string]any {
	in := examples.Inputs()
	in["demo-review"] = map[string]any{"topic": "pgvector for agent memory"}
	return in
}

// demoGraph is a small built-in graph: research (retried once), draft, a
// human review that interrupts, then publish or another round. Its
// checkpoints go to saver (the Studio's checkpointer).
func demoGraph(saver checkpoints.Saver) (engine.Compiled, error) {
	g := engine.NewStateGraph[reviewState]()
	g.AddNode("research", func(ctx context.Context, s reviewState) (engine.Output, error) {
		if engine.Attempt(ctx) == 1 {
			return nil, errFlaky
		}
		return engine.Update{"notes": "three sources on " + s.Topic}, nil
	}, engine.WithRetry(engine.RetryPolicy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond, BackoffFactor: 2,
		RetryOn: func(err error) bool { return errors.Is(err, errFlaky) }}))
	g.AddNode("outline", func(_ context.Context, s reviewState) (engine.Output, error) {
		return engine.Update{"notes": "outline: intro, findings, next steps"}, nil
	})
	g.AddNode("write", func(_ context.Context, s reviewState) (engine.Output, error) {
		time.Sleep(300 * time.Millisecond) // long enough to watch it run
		return engine.Update{"draft": fmt.Sprintf("Draft %d about %s, from %s", s.Rounds+1, s.Topic, strings.Join(s.Notes, "; ")), "rounds": s.Rounds + 1}, nil
	})
	g.AddNode("review", func(ctx context.Context, s reviewState) (engine.Output, error) {
		answer, err := engine.Interrupt(ctx, map[string]any{"question": "Publish this draft?", "draft": s.Draft, "round": s.Rounds})
		if err != nil {
			return nil, err
		}
		ok, _ := answer.(bool)
		return engine.Update{"approved": ok}, nil
	})
	g.AddNode("publish", func(_ context.Context, s reviewState) (engine.Output, error) {
		return engine.Update{"notes": "published round " + fmt.Sprint(s.Rounds)}, nil
	})
	g.AddEdge(engine.Start, "research").AddEdge(engine.Start, "outline")
	g.AddJoin([]string{"research", "outline"}, "write")
	g.AddEdge("write", "review")
	g.AddConditionalEdges("review", func(_ context.Context, s reviewState) (engine.Route, error) {
		if s.Approved || s.Rounds >= 3 {
			return engine.To("approved"), nil
		}
		return engine.To("revise"), nil
	}, map[string]string{"approved": "publish", "revise": "write"})
	g.AddEdge("publish", engine.End)
	return g.Compile(engine.CompileOptions{Name: "demo-review", Checkpointer: saver})
}

package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Backends names the implementation behind each persistence interface, as
// reported by /healthz and the index page ("memory" or "postgres").
type Backends struct {
	Checkpoints string `json:"checkpoints"`
	Store       string `json:"store"`
	Cache       string `json:"cache"`
}

// Pinger is what Health needs from a database: a cheap round trip.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Health answers /healthz: 200 with the backends in use when everything it
// depends on answers, 503 with the reason otherwise. A request
// RequireToken let through without the token (a load balancer's check)
// gets the status alone: {"status":"ok"} or {"status":"unavailable"}.
type Health struct {
	Backends Backends
	// DB is pinged on every request; nil when no database is configured.
	DB     Pinger
	Logger *slog.Logger
	// Queue reports the durable run queue's state (nil without one); it
	// is shown to authenticated callers, with the backends.
	Queue func(ctx context.Context) (any, error)
}

type healthResponse struct {
	Status   string    `json:"status"`
	Backends *Backends `json:"backends,omitempty"`
	Runs     any       `json:"runs,omitempty"`
	Error    string    `json:"error,omitempty"`
}

func (h Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	resp := healthResponse{Status: "ok"}
	detail := !anonymous(r)
	if detail {
		resp.Backends = &h.Backends
	}
	code := http.StatusOK
	if h.DB != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := h.DB.Ping(ctx); err != nil {
			logger(h.Logger).Error("healthz: database ping failed", slog.Any("error", err))
			resp.Status = "unavailable"
			if detail {
				resp.Error = "database unreachable: " + err.Error()
			}
			code = http.StatusServiceUnavailable
		}
	}
	if h.Queue != nil && code == http.StatusOK && detail {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if st, err := h.Queue(ctx); err != nil {
			logger(h.Logger).Error("healthz: read the run queue", slog.Any("error", err))
		} else {
			resp.Runs = st
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// CachedPing wraps db so that pings within ttl of the last one share its
// answer, and concurrent pings wait for one round trip: /healthz answers
// without a token, and a flood of checks must not queue on the database
// connection (or make the real checks time out).
func CachedPing(db Pinger, ttl time.Duration) Pinger {
	return &cachedPing{db: db, ttl: ttl}
}

type cachedPing struct {
	db  Pinger
	ttl time.Duration

	mu   sync.Mutex // held during a round trip: others wait for its answer
	at   time.Time
	last error
}

func (c *cachedPing) Ping(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < c.ttl {
		return c.last
	}
	// The answer is shared: it must not be one client's hang-up.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pingTimeout)
	defer cancel()
	c.last, c.at = c.db.Ping(pctx), time.Now()
	return c.last
}

// pingTimeout bounds a shared health ping.
const pingTimeout = 2 * time.Second

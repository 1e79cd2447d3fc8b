package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("redis_rate", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("redis_rate", httpcaddyfile.Before, "respond")
}

// Handler allows Rate requests per second per client IP, decided by
// redis_rate's GCRA script on Redis: a token bucket of burst Rate.
type Handler struct {
	// URL is the Redis URL (redis://host:port/db).
	URL string `json:"url"`
	// Rate is the requests allowed per second per client.
	Rate int `json:"rate"`
	// Timeout bounds one decision (default 500ms, as make bench's ratelimit cases).
	Timeout caddy.Duration `json:"timeout,omitempty"`

	client  *redis.Client
	limiter *redis_rate.Limiter
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.redis_rate", New: func() caddy.Module { return new(Handler) }}
}

// Provision connects to Redis.
func (h *Handler) Provision(caddy.Context) error {
	opt, err := redis.ParseURL(h.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if h.Timeout == 0 {
		h.Timeout = caddy.Duration(500 * time.Millisecond)
	}
	h.client = redis.NewClient(opt)
	h.limiter = redis_rate.NewLimiter(h.client)
	return nil
}

// Cleanup closes the Redis client.
func (h *Handler) Cleanup() error { return h.client.Close() }

// ServeHTTP refuses with 429 what redis_rate refuses, and with 503 when
// Redis does not answer (closed on error, as the ratelimit cases run).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	ip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string)
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(h.Timeout))
	defer cancel()
	res, err := h.limiter.Allow(ctx, "rr:"+ip, redis_rate.PerSecond(h.Rate))
	if err != nil {
		return caddyhttp.Error(http.StatusServiceUnavailable, err)
	}
	if res.Allowed == 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(res.RetryAfter/time.Second)+1))
		return caddyhttp.Error(http.StatusTooManyRequests, nil)
	}
	return next.ServeHTTP(w, r)
}

// parseCaddyfile reads
//
//	redis_rate <url> <rate per second>
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var m Handler
	h.Next()
	var rate string
	if !h.Args(&m.URL, &rate) {
		return nil, h.ArgErr()
	}
	n, err := strconv.Atoi(rate)
	if err != nil || n <= 0 {
		return nil, h.Errf("rate: %q is not a positive integer", rate)
	}
	m.Rate = n
	if h.NextArg() {
		return nil, h.ArgErr()
	}
	return &m, nil
}

var (
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
)

// Package ratelimit is the http.handlers.ratelimit Caddy module: distributed
// rate limiting decided atomically on Redis.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/errroute"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Handler limits the rate of requests. Each request is counted in every
// zone that applies to it; all zones are decided in one call to the store,
// all or nothing: when one zone refuses, no zone is charged. A refused
// request gets `status` (429) with `Retry-After`, so `handle_errors` can
// shape the page, and sets the placeholders `{http.ratelimit.zone}` (the
// refusing zone) and `{http.ratelimit.retry_after}` (seconds).
type Handler struct {
	// The quotas. At least one.
	Zones []*Zone `json:"zones,omitempty"`

	// The Redis server or cluster that holds the quotas, shared by every
	// Caddy instance. Keys are `<key_prefix>:<zone>:<digest of the key>`;
	// `key_prefix` defaults to `ratelimit`. Without it, quotas live in this
	// process only: correct for a single Caddy instance, but every instance
	// then counts on its own.
	Redis *redispool.Config `json:"redis,omitempty"`

	// The deadline of one decision on the store; past it the store has
	// failed and `on_error` applies. Default: `10ms`.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// What to do when the store fails (an error, a refused connection or no
	// answer within `timeout`): `open` lets the request through and logs a
	// warning (at most one a second); `closed` refuses it with 503 and
	// `Retry-After: 1`; `local` decides with an in-process limiter of the
	// same algorithm at `events/instances`. A zone's `on_error` overrides
	// it. After 5 consecutive failures the store is skipped for 1s, then
	// probed again. Default: `open`.
	OnError string `json:"on_error,omitempty"`

	// How many Caddy instances share the quotas: the `local` fallback gives
	// each instance ⌈events/instances⌉. Default: `1`.
	Instances int `json:"instances,omitempty"`

	// A template expanded per request, such as
	// `{http.request.header.X-Tenant}`: all of a request's keys then share
	// one Redis Cluster slot, so their decision is one atomic call. Without
	// it, zones in different slots are decided with one call per slot. A
	// request carrying a header, cookie or query parameter it reads more
	// than once is refused with 400.
	HashTag string `json:"hash_tag,omitempty"`

	// Which response headers to send: `ietf` (`RateLimit-Policy`,
	// `RateLimit`), `legacy` (`X-RateLimit-Limit`, `X-RateLimit-Remaining`,
	// `X-RateLimit-Reset`), `both` or `none`. `Retry-After` is always sent
	// on a refusal. Default: `both`.
	Headers string `json:"headers,omitempty"`

	// The status of a refused request (400-599). Default: `429`.
	Status int `json:"status,omitempty"`

	// Log the expanded key of refused requests. Off by default: keys are
	// often secrets (API keys) or personal data (IP addresses).
	LogKeys bool `json:"log_keys,omitempty"`

	// The most keys each zone holds in the in-process store (no `redis`)
	// and in the `local` fallback, so a flood of distinct keys cannot
	// exhaust memory. Past it, of the 16 least recently used keys, one
	// whose state equals a fresh one is dropped, else the one that has
	// used the least of its quota: a refused key goes last. Default:
	// `100000`.
	MaxKeys int `json:"max_keys,omitempty"`

	store  limiter.Store       // the quotas: Redis or in-process (a limiter.ZoneMemory)
	local  *limiter.ZoneMemory // the `local` fallback, nil when no zone uses it
	client *redispool.Client
	deny   *denyCache // refusals of the Redis store, answered locally; nil: none
	// carried: each zone's in-process state, by zone index, carried over
	// config reloads (see carryover.go); carryScope: the config load
	carried    []*zoneState
	carryScope any
	// inProcess: store is the memory store (no timeout needed)
	inProcess bool
	// approx: some zone is approximate (decided in process, synced)
	approx  bool
	prefix  string
	timeout time.Duration
	onError failureMode
	headers headerMode
	status  int

	hashTag   template
	policyAll string // RateLimit-Policy when every zone applies
	breaker   *breaker
	brake     *brakeCache // nil: no brake (a store set by a test)
	warn      *warnLimiter
	// overloaded rate-limits the warnings of overloaded decisions
	overloaded *warnLimiter
	logger     *zap.Logger
	now        func() time.Time

	// direct: whether a refusal may be written rather than returned as an
	// error (only when no error route could shape it).
	direct errroute.Direct

	// pos: where the Caddyfile set each field (nil: JSON), for validate
	pos *cfparse.Positions
	// validated: validate ran on this load, with the verdict invalid;
	// validations counts its runs (tests)
	validated   bool
	invalid     error
	validations int
}

// Defaults.
const (
	DefaultTimeout   = 10 * time.Millisecond
	DefaultStatus    = http.StatusTooManyRequests
	DefaultKeyPrefix = "ratelimit"

	// pingTimeout bounds the Redis check at provision.
	pingTimeout = 500 * time.Millisecond
	// statusClientClosed is the status of a request whose client left
	// while it waited in a leaky bucket (nginx's 499, as reverse_proxy uses).
	statusClientClosed = 499
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.ratelimit",
		New: func() caddy.Module { return new(Handler) },
	}
}

// callStore makes one decision on the store under the timeout and the
// circuit breaker, and records its latency and failure.
func (h *Handler) callStore(parent context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	if h.inProcess { // no I/O: nothing to time out, to break or to time
		results, err := h.store.Decide(parent, asks)
		if err != nil {
			return nil, fmt.Errorf("rate limit store: %w", err)
		}
		return results, nil
	}
	ok, probe := h.breaker.allow()
	if !ok {
		return nil, errBreakerOpen
	}
	start := time.Now()
	var results []limiter.Result
	var err error
	switch s := h.store.(type) {
	case limiter.TimeoutStore: // the timeout from the send: no context to allocate
		results, err = s.DecideWithin(parent, h.timeout, asks)
	default:
		ctx, cancel := context.WithTimeout(parent, h.timeout)
		defer cancel()
		results, err = h.store.Decide(ctx, asks)
	}
	metrics.storeDuration.Observe(time.Since(start).Seconds())
	if err == nil && len(results) != len(asks) {
		err = fmt.Errorf("store returned %d results for %d zones", len(results), len(asks))
	}
	if err != nil {
		// A client that went away is not a store failure, nor an Ask
		// the store refused to decide, nor a decision this process was
		// too loaded to send.
		if parent.Err() == nil && !errors.Is(err, limiter.ErrInvalidAsk) && !errors.Is(err, limiter.ErrOverloaded) {
			metrics.storeErrors.Inc()
			h.breaker.failure(probe)
		} else {
			h.breaker.release(probe) // no verdict on the store
		}
		return nil, fmt.Errorf("rate limit store: %w", err)
	}
	h.breaker.success(probe)
	return results, nil
}

// logRefusal logs a refusal with what explains it: the zone, the outcome,
// what is left and the rule applied (the quota after plans, placeholders
// and brake, and where it came from); at info for the key's first in the
// zone's interval, else at debug and summed (see refusallog.go).
func (h *Handler) logRefusal(msg string, d *zoneDecision) {
	c := h.logger.Check(h.refusalLevel(d, h.now()), msg)
	if c == nil {
		return
	}
	o := outcomeRefused
	if d.zone.DryRun {
		o = outcomeDryRunRefused
	}
	l := d.ask.Limit
	fields := make([]zap.Field, 0, 11)
	fields = append(fields,
		zap.String("zone", d.zone.Name),
		zap.String("outcome", outcomeNames[o]),
		zap.Int64("remaining", d.res.Remaining),
		zap.Duration("retry_after", d.res.RetryAfter),
		zap.String("algorithm", l.Algorithm),
		zap.Int64("events", l.Events),
		zap.Duration("window", l.Window),
		zap.String("quota", d.source.String()),
	)
	if l.Burst > 0 {
		fields = append(fields, zap.Int64("burst", l.Burst))
	}
	if f := h.brake.factor(); f < 1 {
		fields = append(fields, zap.Float64("brake", f))
	}
	if h.LogKeys {
		fields = append(fields, zap.String("key", d.key))
	}
	c.Write(fields...)
}

// warnStoreFailure logs a store failure, at most once per warnEvery: an
// outage must not flood the logs.
func (h *Handler) warnStoreFailure(ds []zoneDecision, err error) {
	suppressed, ok := h.warn.allow(h.now())
	if !ok {
		return
	}
	c := h.logger.Check(zapcore.WarnLevel, "rate limit store failed; on_error applies")
	if c == nil {
		return
	}
	zones := make([]string, 0, len(ds))
	for i := range ds {
		zones = append(zones, ds[i].zone.Name)
	}
	c.Write(zap.String("zones", strings.Join(zones, ",")), zap.Error(err),
		zap.String("breaker", h.breaker.state()),
		zap.Int64("suppressed", suppressed))
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

package ratelimit

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/errroute"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Provision sets up the zones and the store. A Redis that does not answer
// at start is logged, not an error: it may come up later, and `on_error`
// applies meanwhile.
func (h *Handler) Provision(ctx caddy.Context) error {
	if err := h.validateOnce(); err != nil {
		return err
	}
	if err := h.provisionSettings(ctx); err != nil {
		return err
	}
	defs, err := zoneDefs(h.Zones) // before provisioning consumes them
	if err != nil {
		return err
	}
	if err := h.provisionZones(ctx); err != nil {
		return err
	}
	if err := h.provisionJWT(ctx); err != nil {
		return err
	}
	h.warnLooseProxies(ctx)
	h.provisionEvents(ctx)
	deny, err := h.provisionStore(ctx)
	if err != nil {
		return err
	}
	return h.provisionLast(ctx, defs, deny)
}

// provisionSettings sets the handler's defaults, modes and helpers, and
// registers its metrics.
func (h *Handler) provisionSettings(ctx caddy.Context) error {
	if h.logger == nil { // set by tests
		h.logger = ctx.Logger()
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.refresher == nil { // set by tests
		h.refresher = processRefresher
	}
	h.holds = new(leaseHolds)
	h.warn, h.overloaded = new(warnLimiter), new(warnLimiter)
	if err := initMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	h.breaker = &breaker{now: h.now, log: h.logger, gauge: metrics.breakerOpen}
	var err error
	if h.onError, err = parseFailureMode(h.OnError); err != nil {
		return err
	}
	if h.headers, err = parseHeaderMode(h.Headers); err != nil {
		return err
	}
	h.timeout = time.Duration(h.Timeout)
	if h.timeout <= 0 {
		h.timeout = DefaultTimeout
	}
	h.status = cmp.Or(h.Status, DefaultStatus)
	h.prefix = DefaultKeyPrefix
	h.network, h.setsNetwork = h.clientNetwork(), h.usesClientNetwork()
	h.direct = errroute.New(ctx.Modules())
	return nil
}

// provisionZones provisions each zone, then what depends on all of them:
// the RateLimit-Policy of every zone and the hash tag.
func (h *Handler) provisionZones(ctx caddy.Context) error {
	for _, z := range h.Zones {
		if err := z.provision(ctx, h.onError, max(h.Instances, 1), h.status); err != nil {
			return err
		}
		h.concurrency = h.concurrency || z.limit.Algorithm == limiter.Concurrency
		h.thresholds = h.thresholds || len(z.Notify) > 0
	}
	h.policyAll = policyHeader(h.Zones)
	h.hashTag = newTemplate(h.HashTag)
	for _, z := range h.Zones { // the hash tag is part of every store key
		z.once = appendFields(z.once, h.HashTag)
	}
	return nil
}

// provisionStore sets up the store: one set by a test, the zones'
// in-process memory (no `redis`; see provisionCarry), or the shared Redis
// client. deny: whether the store's refusals may be cached (see denyCache).
func (h *Handler) provisionStore(ctx caddy.Context) (deny bool, err error) {
	if h.store != nil { // set by tests
		return false, nil
	}
	if h.Redis == nil {
		h.inProcess = true
		return false, nil
	}
	cfg := h.Redis.Expand()
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	if cfg.KeyPrefix != "" {
		h.prefix = cfg.KeyPrefix
	}
	cfg.OwnBreaker = true // the breaker and its probe (recovery.go)
	h.client, err = redispool.Get(cfg)
	if err != nil {
		return false, fmt.Errorf("redis %s: %w", cfg.Describe(), err)
	}
	store := limiter.NewRedisStore(h.client.UniversalClient)
	h.store = store
	h.breaker.rec = &recovery{store: store, conns: cfg.IdleConns(),
		dial: time.Duration(cmp.Or(cfg.DialTimeout, caddy.Duration(redispool.DefaultDialTimeout))),
		read: time.Duration(cmp.Or(cfg.ReadTimeout, caddy.Duration(redispool.DefaultReadTimeout)))}
	// On a cluster, zones in several slots are charged and refunded
	// separately: a refusal may then be due to another request's passing
	// charge, which must not be remembered (see denyCache).
	_, cluster := h.client.UniversalClient.(*redis.ClusterClient)
	deny = !cluster || len(h.Zones) == 1 || h.HashTag != ""
	if err := redispool.Ping(ctx, h.client, cfg, pingTimeout); err != nil {
		h.logger.Warn("rate limit store unreachable at start; on_error applies until it answers",
			zap.Error(err))
	}
	return deny, nil
}

// provisionLast ends Provision: the zones' in-process state (carried over
// from the previous config when unchanged; deny: with a deny cache), the
// brake and admin registration, then the approximate zones' syncs.
func (h *Handler) provisionLast(ctx caddy.Context, defs []json.RawMessage, deny bool) error {
	if err := h.provisionCarry(ctx, defs, deny); err != nil {
		return err
	}
	if err := h.provisionOps(ctx); err != nil {
		return err
	}
	h.provisionApprox()
	return nil
}

// provisionOps sets up the handler's brake and registers it for the admin
// API; the last step of Provision.
func (h *Handler) provisionOps(ctx caddy.Context) error {
	if err := registerBrakeGauge(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	if err := registerBansInForce(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	e := &loadedHandler{h: h}
	switch {
	case h.inProcess:
		e.brakeStore, e.brakeID, e.brakeDesc = processBrake, "process", "process (in-process store)"
	case h.client != nil:
		e.brakeStore = newRedisBrake(h.client.UniversalClient, h.prefix)
		e.brakeID = fmt.Sprintf("redis %p %s", h.client.UniversalClient, h.prefix)
		e.brakeDesc = "redis " + h.Redis.Expand().Describe() + " key " + h.prefix + ":brake"
	}
	if e.brakeStore != nil {
		h.brake = newBrakeCache(ctx, e.brakeStore, h.logger)
		e.brake = h.brake
	}
	register(e)
	return nil
}

// cleanupOps undoes provisionOps.
func (h *Handler) cleanupOps() {
	unregister(h)
	h.brake.close()
	updateBrakeGauge()
}

// Cleanup releases the Redis client, the plans, the brake and the zones'
// in-process state (which goes only when no newer config uses it). A
// second call releases nothing more. The Redis client goes when the last
// request holding a concurrency lease has given it back.
func (h *Handler) Cleanup() error {
	if h.breaker != nil {
		h.breaker.stop()
	}
	h.flushRefusals()
	h.JWT.cleanup()
	h.cleanupOps()
	h.cleanupCarry()
	var errs []error
	for _, z := range h.Zones {
		errs = append(errs, z.cleanup())
	}
	return errors.Join(append(errs, h.holds.close(h.client.Release, h.logger))...)
}

// Package ratelimit is the http.handlers.ratelimit Caddy module: distributed
// rate limiting decided atomically on Redis.
package ratelimit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

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

	// The deadline of one decision's round trip to the store, measured
	// from the moment it is written (time queued in process behind other
	// decisions is not charged; the reply is read until twice this after
	// the write); past it the store has failed and `on_error` applies. A
	// decision that cannot be written in time (1024 waiting, or unsent
	// after 1s + timeout) is refused with 503 and `Retry-After: 1`,
	// whatever `on_error` says. Default: `10ms`.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// What to do when the store fails (an error, a refused connection or no
	// answer within `timeout`): `open` lets the request through and logs a
	// warning (at most one a second); `closed` refuses it with 503 and
	// `Retry-After: 1`; `local` decides with an in-process limiter of the
	// same algorithm at `events/instances`. A zone's `on_error` overrides
	// it. When at least 5 store calls failed over the current and the
	// previous second and they are at least half of the calls, the store is
	// skipped for 1s, then probed again. Default: `open`.
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

// Provision sets up the zones and the store. A Redis that does not answer
// at start is logged, not an error: it may come up later, and `on_error`
// applies meanwhile.
func (h *Handler) Provision(ctx caddy.Context) error {
	if h.logger == nil { // set by tests
		h.logger = ctx.Logger()
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.breaker = &breaker{now: h.now}
	h.warn, h.overloaded = new(warnLimiter), new(warnLimiter)
	if err := initMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}

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
	h.status = h.Status
	if h.status == 0 {
		h.status = DefaultStatus
	}
	if err := h.checkZones(); err != nil {
		return err
	}
	defs, err := zoneDefs(h.Zones) // before provisioning consumes them
	if err != nil {
		return err
	}
	for _, z := range h.Zones {
		if err := z.provision(ctx, h.onError, max(h.Instances, 1)); err != nil {
			return err
		}
	}
	h.policyAll = policyHeader(h.Zones)
	h.hashTag = newTemplate(h.HashTag)
	for _, z := range h.Zones { // the hash tag is part of every store key
		z.once = appendFields(z.once, h.HashTag)
	}
	h.direct = errroute.New(ctx.Modules())

	h.prefix = DefaultKeyPrefix
	if h.store != nil { // set by tests
		return h.provisionLast(ctx, defs, false)
	}
	if h.Redis == nil {
		h.inProcess = true // the zones' memory stores: see provisionCarry
		return h.provisionLast(ctx, defs, false)
	}
	cfg := h.Redis.Expand()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.KeyPrefix != "" {
		h.prefix = cfg.KeyPrefix
	}
	h.client, err = redispool.Get(cfg)
	if err != nil {
		return fmt.Errorf("redis %s: %w", cfg.Describe(), err)
	}
	h.store = limiter.NewRedisStore(h.client.UniversalClient)
	// On a cluster, zones in several slots are charged and refunded
	// separately: a refusal may then be due to another request's passing
	// charge, which must not be remembered (see denyCache).
	_, cluster := h.client.UniversalClient.(*redis.ClusterClient)
	deny := !cluster || len(h.Zones) == 1 || h.HashTag != ""
	if err := redispool.Ping(ctx, h.client, cfg, pingTimeout); err != nil {
		h.logger.Warn("rate limit store unreachable at start; on_error applies until it answers",
			zap.Error(err))
	}
	return h.provisionLast(ctx, defs, deny)
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

// Validate checks the configuration.
func (h *Handler) Validate() error {
	if err := h.checkZones(); err != nil {
		return err
	}
	if _, err := parseFailureMode(h.OnError); err != nil {
		return err
	}
	if _, err := parseHeaderMode(h.Headers); err != nil {
		return err
	}
	if h.Status != 0 && (h.Status < 400 || h.Status > 599) {
		return fmt.Errorf("invalid status %d: must be 400-599", h.Status)
	}
	if h.Instances < 0 {
		return fmt.Errorf("invalid instances %d: must be >= 1", h.Instances)
	}
	if h.MaxKeys < 0 {
		return fmt.Errorf("invalid max_keys %d: must be >= 1", h.MaxKeys)
	}
	if h.Timeout < 0 {
		return fmt.Errorf("invalid timeout %s: must be > 0", time.Duration(h.Timeout))
	}
	return nil
}

func (h *Handler) checkZones() error {
	if len(h.Zones) == 0 {
		return errors.New("at least one zone is required")
	}
	seen := make(map[string]bool, len(h.Zones))
	for i, z := range h.Zones {
		if z == nil {
			return fmt.Errorf("zone %d: empty", i)
		}
		if seen[z.Name] {
			return fmt.Errorf("duplicate zone %q", z.Name)
		}
		seen[z.Name] = true
		if err := z.validate(); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup releases the Redis client, the plans, the brake and the zones'
// in-process state (which goes only when no newer config uses it).
func (h *Handler) Cleanup() error {
	h.flushRefusals()
	h.cleanupOps()
	h.cleanupCarry()
	var errs []error
	for _, z := range h.Zones {
		errs = append(errs, z.cleanup())
	}
	return errors.Join(append(errs, h.client.Release())...)
}

// zoneDecision is one zone's part of one request.
type zoneDecision struct {
	zone  *Zone
	key   string      // the expanded key, for logs (log_keys)
	cost  int64       // units the request takes
	ask   limiter.Ask // its Limit is the quota applied (plan, placeholders, brake)
	res   limiter.Result
	state decisionState
	// source: where the quota came from
	source quotaSource
	// held: the approximate zone's entry counting this request while the
	// store decides it (see approxTable.begin)
	held *approxEntry
	// unsent: the entry's units not known to the store when the request
	// was sent to it
	unsent int64
	// cached: res came from the deny cache, not from the store itself
	cached bool
}

type decisionState uint8

const (
	stateNone        decisionState = iota // not decided (another zone refused first)
	stateStore                            // res came from the store
	stateApprox                           // res came from an approximate zone's local counts
	stateLocal                            // res came from the local fallback
	stateFailOpen                         // the store failed; no decision
	stateFailClosed                       // the store failed; refuse with 503
	stateUnavailable                      // the store failed while charging after the response
	stateOverloaded                       // the decision could not be sent in time (see overload.go)
)

func (d *zoneDecision) decided() bool {
	return d.state == stateStore || d.state == stateLocal || d.state == stateApprox
}

// refused reports whether the zone refuses the request (dry_run zones never do).
func (d *zoneDecision) refused() bool { return d.decided() && !d.res.Allowed && !d.zone.DryRun }

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		repl = caddy.NewReplacer()
	}
	var buf [4]zoneDecision
	ds := buf[:0]
	var tagBuf [limiter.DigestLen]byte
	var tag []byte // the digest of the expanded hash tag
	if h.HashTag != "" {
		hashTag := h.hashTag.expand(r, repl)
		if hashTag == "" {
			hashTag = h.HashTag // still one slot for all such requests
		}
		tag = limiter.AppendDigest(tagBuf[:0], hashTag)
	}
	keysLen := 0
	brake := h.brake.factor()
	for _, z := range h.Zones {
		match, err := z.matches(r)
		if err != nil {
			return err
		}
		if !match {
			continue
		}
		d, err := h.zoneDecisionFor(z, r, repl, brake)
		if err != nil {
			return err
		}
		keysLen += limiter.StoreKeyLen(h.prefix, z.Name, tag)
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return next.ServeHTTP(w, r)
	}
	h.setStoreKeys(ds, tag, keysLen)

	var storeErr error
	var now time.Time // for the deny cache and approximate zones
	if h.deny != nil || h.approx {
		now = time.Now()
	}
	if !h.approx || h.approxTake(ds, now) {
		if h.deny == nil || !h.deny.answer(ds, now) {
			storeErr = h.decide(r.Context(), ds)
			h.rechargeAfterDryRun(r.Context(), ds)
		}
	}
	if h.approx {
		h.approxSettle(ds)
	}
	if errors.Is(storeErr, limiter.ErrInvalidAsk) { // a bound missed: a bug, never a bypass
		h.logger.Error("rate limit ask out of bounds", zap.Error(storeErr))
		return caddyhttp.Error(http.StatusInternalServerError, storeErr)
	}
	if errors.Is(storeErr, limiter.ErrOverloaded) { // load: never a pass
		if done, err := h.refuseOverloaded(w, repl, ds, storeErr); done {
			return err
		}
		storeErr = nil
	}

	// A fail-closed zone refuses with 503.
	for i := range ds {
		if ds[i].state == stateFailClosed {
			return h.failClosed(w, repl, ds, i, storeErr)
		}
	}
	if storeErr != nil {
		h.warnStoreFailure(ds, storeErr)
	}

	// A refusal: the zone refusing longest names it.
	pick := -1
	for i := range ds {
		if ds[i].refused() && (pick < 0 || ds[i].res.RetryAfter > ds[pick].res.RetryAfter) {
			pick = i
		}
	}
	if pick >= 0 {
		return h.refuse(w, r, repl, ds, pick)
	}

	// Allowed: headers for the zone with the least left.
	var delay time.Duration
	for i := range ds {
		d := &ds[i]
		switch {
		case d.state == stateNone, d.state == stateOverloaded:
			continue
		case d.state == stateFailOpen:
			d.zone.counters[outcomeFailOpen].Inc()
			continue
		case !d.res.Allowed: // dry_run
			d.zone.counters[outcomeDryRunRefused].Inc()
			h.logRefusal("rate limit exceeded (dry run)", d)
		case d.state == stateLocal:
			d.zone.counters[outcomeFallback].Inc()
		default:
			d.zone.counters[outcomeAllowed].Inc()
		}
		delay = max(delay, d.res.Delay)
		if pick < 0 || d.res.Remaining < ds[pick].res.Remaining {
			pick = i
		}
	}
	if pick >= 0 {
		h.setHeaders(w.Header(), ds, pick, false)
	}

	if delay > 0 { // leaky_bucket: wait for the request's turn
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return caddyhttp.Error(statusClientClosed, r.Context().Err())
		}
	}

	if !hasCountStatus(ds) {
		return next.ServeHTTP(w, r)
	}
	rec := caddyhttp.NewResponseRecorder(w, nil, nil)
	err := next.ServeHTTP(rec, r)
	status := rec.Status()
	var he caddyhttp.HandlerError
	switch {
	case errors.As(err, &he):
		status = he.StatusCode
		if status == 0 {
			status = http.StatusInternalServerError
		}
	case err != nil:
		status = http.StatusInternalServerError
	case status == 0:
		status = http.StatusOK
	}
	h.chargeAfter(r.Context(), ds, status)
	return err
}

// setStoreKeys sets the store key of every decision (see limiter.StoreKey), all
// in one allocation of n bytes; tag is the digest of the hash tag.
func (h *Handler) setStoreKeys(ds []zoneDecision, tag []byte, n int) {
	b := make([]byte, 0, n)
	for i := range ds {
		start := len(b)
		b = limiter.AppendStoreKey(b, h.prefix, ds[i].zone.Name, tag, ds[i].key)
		ds[i].ask.Key = unsafe.String(&b[start], len(b)-start) // b[start:] is never written again
	}
}

// askBuf holds the asks of one store call: pooled, so the usual request
// (up to 4 zones) builds them without allocating.
type askBuf [4]limiter.Ask

var askPool = sync.Pool{New: func() any { return new(askBuf) }}

// getAsks returns n asks and the buffer to give to putAsks after the call.
func getAsks(n int) ([]limiter.Ask, *askBuf) {
	if n > len(askBuf{}) {
		return make([]limiter.Ask, n), nil
	}
	b := askPool.Get().(*askBuf)
	return b[:n], b
}

func putAsks(b *askBuf) {
	if b != nil {
		*b = askBuf{} // drop the keys
		askPool.Put(b)
	}
}

func hasCountStatus(ds []zoneDecision) bool {
	for i := range ds {
		if len(ds[i].zone.CountStatus) > 0 && ds[i].decided() {
			return true
		}
	}
	return false
}

// decide asks the store for every zone; when it fails, each zone follows
// its failure mode. It returns the store's error, if any.
func (h *Handler) decide(ctx context.Context, ds []zoneDecision) error {
	var ibuf [4]int
	idx := ibuf[:0] // the zones not decided yet
	for i := range ds {
		if ds[i].state == stateNone {
			idx = append(idx, i)
		}
	}
	asks, ab := getAsks(len(idx))
	for j, i := range idx {
		asks[j] = ds[i].ask
	}
	var sent time.Time
	if h.deny != nil {
		sent = time.Now()
	}
	results, err := h.callStore(ctx, asks)
	putAsks(ab)
	if errors.Is(err, limiter.ErrOverloaded) { // load, not a store failure: no on_error
		for _, i := range idx {
			ds[i].state = stateOverloaded
		}
		return err
	}
	if err == nil {
		for j, i := range idx {
			ds[i].res, ds[i].state = results[j], stateStore
		}
		if h.deny != nil {
			h.deny.remember(ds, sent, time.Now())
		}
		return nil
	}
	var local []int
	for _, i := range idx {
		switch ds[i].zone.onError {
		case failOpen:
			ds[i].state = stateFailOpen
		case failClosed:
			if ds[i].zone.DryRun {
				ds[i].state = stateFailOpen
			} else {
				ds[i].state = stateFailClosed
			}
		case failLocal:
			local = append(local, i)
		}
	}
	h.decideLocal(ctx, ds, local, func(i int) limiter.Ask { return ds[i].ask })
	return err
}

// decideLocal decides ds[idx...] with the in-process fallback at
// events/instances. The asks are built by ask.
func (h *Handler) decideLocal(ctx context.Context, ds []zoneDecision, idx []int, ask func(int) limiter.Ask) {
	if len(idx) == 0 {
		return
	}
	asks, ab := getAsks(len(idx))
	for j, i := range idx {
		asks[j] = ask(i)
		asks[j].Limit = ds[i].localLimit()
	}
	results, err := h.local.Decide(ctx, asks)
	putAsks(ab)
	if err != nil || len(results) != len(asks) { // the memory store does not fail; be safe
		for _, i := range idx {
			ds[i].state = stateFailOpen
		}
		return
	}
	for j, i := range idx {
		ds[i].res, ds[i].state = results[j], stateLocal
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

// rechargeAfterDryRun: the store is all or nothing, so a dry_run zone that
// would refuse left the other zones uncharged. When no enforcing zone
// refused, decide again without the dry_run zones that refused, so the
// request takes its quota as if they were absent.
func (h *Handler) rechargeAfterDryRun(ctx context.Context, ds []zoneDecision) {
	dry, enforcing := false, false
	for i := range ds {
		d := &ds[i]
		// Approximate zones decided in process took no part in the call.
		if (d.state == stateStore || d.state == stateLocal) && !d.res.Allowed {
			if d.zone.DryRun {
				dry = true
			} else {
				enforcing = true
			}
		}
	}
	if !dry || enforcing {
		return
	}
	var store, local []int
	for i := range ds {
		d := &ds[i]
		if !d.res.Allowed || d.ask.Cost == 0 {
			continue
		}
		if d.state == stateStore {
			store = append(store, i)
		} else if d.state == stateLocal {
			local = append(local, i)
		}
	}
	h.decideLocal(ctx, ds, local, func(i int) limiter.Ask { return ds[i].ask })
	if len(store) == 0 {
		return
	}
	asks, ab := getAsks(len(store))
	for j, i := range store {
		asks[j] = ds[i].ask
	}
	results, err := h.callStore(ctx, asks)
	putAsks(ab)
	if err != nil {
		h.warnStoreFailure(ds, err) // the first decision stands
		return
	}
	for j, i := range store {
		ds[i].res = results[j]
	}
}

// chargeAfter takes the quota of count_status zones whose status counts.
func (h *Handler) chargeAfter(ctx context.Context, ds []zoneDecision, status int) {
	var store, local []int
	for i := range ds {
		d := &ds[i]
		if len(d.zone.CountStatus) == 0 || d.cost == 0 || !d.zone.counts(status) {
			continue
		}
		switch d.state {
		case stateStore:
			store = append(store, i)
		case stateLocal:
			local = append(local, i)
		case stateApprox:
			d.zone.approx.charge(d.ask.Key, d.ask.Limit, d.cost)
		}
	}
	if len(store)+len(local) == 0 {
		return
	}
	// The response is written: the client may be gone, the charge is not.
	ctx = context.WithoutCancel(ctx)
	charge := func(i int) limiter.Ask { a := ds[i].ask; a.Cost = ds[i].cost; return a }
	h.decideLocal(ctx, ds, local, charge)
	if len(store) == 0 {
		return
	}
	asks, ab := getAsks(len(store))
	for j, i := range store {
		asks[j] = charge(i)
	}
	_, err := h.callStore(ctx, asks)
	putAsks(ab)
	if err != nil {
		var fallback []int
		for _, i := range store {
			if ds[i].zone.onError == failLocal {
				fallback = append(fallback, i)
			} else {
				ds[i].state = stateUnavailable
			}
		}
		h.decideLocal(ctx, ds, fallback, charge)
		h.warnStoreFailure(ds, err)
	}
}

// failClosed refuses with 503 because the store failed for ds[i].
func (h *Handler) failClosed(w http.ResponseWriter, repl *caddy.Replacer, ds []zoneDecision, i int, err error) error {
	for j := range ds {
		switch ds[j].state {
		case stateFailClosed:
			ds[j].zone.counters[outcomeFailClosed].Inc()
		case stateFailOpen:
			ds[j].zone.counters[outcomeFailOpen].Inc()
		}
	}
	w.Header()[hdrRetryAfter] = []string{"1"}
	repl.Set("http.ratelimit.zone", ds[i].zone.Name)
	repl.Set("http.ratelimit.retry_after", "1")
	h.warnStoreFailure(ds, err)
	return caddyhttp.Error(http.StatusServiceUnavailable, err)
}

// refuse refuses the request because ds[pick] (and maybe others) refused.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, ds []zoneDecision, pick int) error {
	for i := range ds {
		d := &ds[i]
		switch {
		case d.refused():
			d.zone.counters[outcomeRefused].Inc()
		case d.decided() && !d.res.Allowed: // dry_run
			d.zone.counters[outcomeDryRunRefused].Inc()
		}
	}
	d := &ds[pick]
	retry := h.setHeaders(w.Header(), ds, pick, true)
	repl.Set("http.ratelimit.zone", d.zone.nameAny)
	repl.Set("http.ratelimit.retry_after", retry)
	h.logRefusal("rate limit exceeded", d)
	if h.direct.Writes(r) { // a fifth cheaper than Caddy's error path
		w.WriteHeader(h.status)
		return nil
	}
	return caddyhttp.Error(h.status, d.zone.errRefused)
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
	if errors.Is(err, limiter.ErrOverloaded) { // load, not the store (a charge after the response)
		h.warnOverloaded(ds, "rate limit queue overloaded; a charge after the response was not sent")
		return
	}
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

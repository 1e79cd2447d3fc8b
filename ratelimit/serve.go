package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// The request pipeline, in the order a request takes it:
//
//  1. collect: what the request asks of each zone that applies to it
//     (key, cost, quota), checked before any store is asked (collect.go);
//  2. decide: every zone at once, in process for approximate zones, from
//     the deny cache, else on the store, all or nothing (decide.go), in a
//     `ratelimit.decide` span when Caddy traces the request (tracing.go);
//  3. respond: a store failure's or an overload's answer, a refusal, or
//     headers, the leaky bucket's wait and the next handler, charging
//     count_status zones after its response and settling cost_after zones
//     when it ends (settlement.go); the leases of concurrency zones are
//     given back when the handler returns (leases.go), with the
//     settlement when there is one.
//
// Only collect and decide write the request's zoneDecisions (collect.go,
// decide.go); respond reads them.

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		repl = caddy.NewReplacer()
	}
	h.setClientNetwork(r, repl)
	var buf [4]zoneDecision
	ds, err := h.collect(r, repl, buf[:0])
	if err != nil {
		var jr *jwtRefusal
		if errors.As(err, &jr) {
			return h.refuseJWT(w, r, jr)
		}
		return err
	}
	if len(ds) == 0 {
		return next.ServeHTTP(w, r)
	}
	storeErr := h.decideTraced(r.Context(), ds) // decideAll, traced (tracing.go)
	var rl *requestLeases
	if h.concurrency {
		if rl = h.takeLeases(r, ds); rl != nil {
			defer h.giveBack(rl)
		}
	}
	if done, err := h.answerFailure(w, repl, ds, storeErr); done {
		return err
	}
	if pick := refusing(ds); pick >= 0 {
		return h.refuse(w, r, repl, ds, pick)
	}
	if err := h.allow(w, r, ds); err != nil {
		return err
	}
	if !settlesAfter(ds) {
		return next.ServeHTTP(w, r)
	}
	return h.serveAfter(w, r, repl, ds, rl, next)
}

// collect appends to ds what r asks of each zone that applies to it, with
// their store keys. The bearer token is verified before the first template
// reading it is expanded (a *jwtRefusal when refused).
func (h *Handler) collect(r *http.Request, repl *caddy.Replacer, ds []zoneDecision) ([]zoneDecision, error) {
	var tagBuf [limiter.DigestLen]byte
	var tag []byte // the digest of the expanded hash tag
	jwtSet := false
	if h.jwtTag {
		if err := h.setJWT(r, repl); err != nil {
			return nil, err
		}
		jwtSet = true
	}
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
			return nil, err
		}
		if !match {
			continue
		}
		if z.readsJWT && !jwtSet {
			if err := h.setJWT(r, repl); err != nil {
				return nil, err
			}
			jwtSet = true
		}
		d, err := h.zoneDecisionFor(z, r, repl, brake)
		if err != nil {
			return nil, err
		}
		keysLen += limiter.StoreKeyLen(h.prefix, z.Name, tag)
		ds = append(ds, d)
	}
	if len(ds) > 0 {
		h.setStoreKeys(ds, tag, keysLen)
	}
	return ds, nil
}

// decideAll decides every zone: approximate zones in process when they
// can, then the deny cache, then the store (again without the dry_run
// zones that refused, see rechargeAfterDryRun). It returns the store's
// error, if any.
func (h *Handler) decideAll(ctx context.Context, ds []zoneDecision) error {
	var storeErr error
	var now time.Time // for the deny cache, approximate zones and the store's timing
	if h.deny != nil || h.approx || !h.inProcess {
		now = time.Now()
	}
	if !h.approx || h.approxTake(ds, now) {
		if h.deny == nil || !h.decideDenied(ds, now) {
			storeErr = h.decide(ctx, ds, now)
			h.rechargeAfterDryRun(ctx, ds)
		}
	}
	if h.approx {
		h.approxSettle(ds)
	}
	return storeErr
}

// answerFailure answers the request when the decision failed: 500 for an
// ask out of bounds (a bug, never a bypass), 503 when overloaded or when a
// fail-closed zone's store failed. Otherwise a store failure is logged and
// done is false: the zones' on_error applied.
func (h *Handler) answerFailure(w http.ResponseWriter, repl *caddy.Replacer, ds []zoneDecision, storeErr error) (done bool, err error) {
	if errors.Is(storeErr, limiter.ErrInvalidAsk) {
		h.logger.Error("rate limit ask out of bounds", zap.Error(storeErr))
		return true, caddyhttp.Error(http.StatusInternalServerError, storeErr)
	}
	if errors.Is(storeErr, limiter.ErrOverloaded) { // load: never a pass
		if done, err := h.refuseOverloaded(w, repl, ds, storeErr); done {
			return true, err
		}
		storeErr = nil
	}
	for i := range ds {
		if ds[i].state == stateFailClosed {
			return true, h.failClosed(w, repl, ds, i, storeErr)
		}
	}
	if storeErr != nil {
		h.warnStoreFailure(ds, storeErr)
	}
	return false, nil
}

// refusing is the zone that refuses the request longest, -1 if none does.
func refusing(ds []zoneDecision) int {
	pick := -1
	for i := range ds {
		if ds[i].refused() && (pick < 0 || ds[i].res.RetryAfter > ds[pick].res.RetryAfter) {
			pick = i
		}
	}
	return pick
}

// allow counts each zone's outcome, sets the headers of the zone with the
// least left and waits for a leaky bucket's turn; an error when the client
// left while it waited.
func (h *Handler) allow(w http.ResponseWriter, r *http.Request, ds []zoneDecision) error {
	pick := -1
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
	return nil
}

// serveAfter runs next, then charges the count_status zones whose status
// the response has, and settles the cost_after zones whatever the ending
// (a deferred call: also when next panics, the real cost then unknown).
func (h *Handler) serveAfter(w http.ResponseWriter, r *http.Request, repl *caddy.Replacer, ds []zoneDecision, rl *requestLeases, next caddyhttp.Handler) (err error) {
	rec := caddyhttp.NewResponseRecorder(w, nil, nil)
	ended := false
	defer func() {
		if !ended { // panicked: the status is unknown
			h.settle(r, repl, ds, rl, rec.Header(), 0, false)
		}
	}()
	err = next.ServeHTTP(rec, r)
	ended = true
	status := responseStatus(rec, err)
	h.chargeAfter(r.Context(), ds, status)
	h.settle(r, repl, ds, rl, rec.Header(), status, err == nil)
	return err
}

// responseStatus is the status of a response next wrote into rec,
// returning err.
func responseStatus(rec caddyhttp.ResponseRecorder, err error) int {
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
	return status
}

// settlesAfter reports whether a decided zone counts only some statuses
// or settles its cost after the response.
func settlesAfter(ds []zoneDecision) bool {
	for i := range ds {
		z := ds[i].zone
		if (len(z.CountStatus) > 0 || z.costAfter != nil) && ds[i].decided() {
			return true
		}
	}
	return false
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
		if h.Body == bodyProblem {
			d.zone.problem.write(w, h.status, retry)
			return nil
		}
		w.WriteHeader(h.status)
		return nil
	}
	return caddyhttp.Error(h.status, d.zone.errRefused)
}

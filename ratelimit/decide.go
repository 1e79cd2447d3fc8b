package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

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

// decide asks the store for every zone; when it fails, each zone follows
// its failure mode. It returns the store's error, if any. now, read once
// per request (the clock costs a syscall on some VMs), is the send time
// the deny cache counts from (a little early: its entries end no later
// than the store's) and the start of the store call's timing.
func (h *Handler) decide(ctx context.Context, ds []zoneDecision, now time.Time) error {
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
	results, err := h.callStore(ctx, asks, now)
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
			h.deny.remember(ds, now, time.Time{})
		}
		h.noteBans(ds)
		if h.events != nil {
			h.emitEvents(ds)
		}
		if h.thresholds {
			h.tellDecided(ds)
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
	results, err := h.callStore(ctx, asks, time.Now())
	putAsks(ab)
	if err != nil {
		h.warnStoreFailure(ds, err) // the first decision stands
		return
	}
	for j, i := range store {
		ds[i].res = results[j]
	}
}

// chargeAfter takes the quota of count_status zones whose status counts
// (those with cost_after settle instead: see settle).
func (h *Handler) chargeAfter(ctx context.Context, ds []zoneDecision, status int) {
	var store, local []int
	for i := range ds {
		d := &ds[i]
		if len(d.zone.CountStatus) == 0 || d.cost == 0 || !d.zone.counts(status) || d.zone.costAfter != nil {
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
	// The request was served: a charge refused now is no offence (no ban).
	charge := func(i int) limiter.Ask { a := ds[i].ask; a.Cost, a.Ban = ds[i].cost, limiter.Ban{}; return a }
	h.decideLocal(ctx, ds, local, charge)
	if len(store) == 0 {
		return
	}
	asks, ab := getAsks(len(store))
	for j, i := range store {
		asks[j] = charge(i)
	}
	_, err := h.callStore(ctx, asks, time.Now())
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

// approxTake decides the approximate zones of ds whose keys have fresh
// local counts (charging them locally when allowed), and reports whether
// the store must still be asked: some zone is left and none refused.
func (h *Handler) approxTake(ds []zoneDecision, now time.Time) bool {
	left, refused := false, false
	for i := range ds {
		d := &ds[i]
		if d.zone.approx == nil {
			left = true
			continue
		}
		res, ok := d.zone.approx.take(d.ask, now)
		if !ok {
			d.held, d.unsent = d.zone.approx.begin(d.ask.Key, d.ask.Limit, d.ask.Cost)
			left = true
			continue
		}
		d.res, d.state = res, stateApprox
		refused = refused || !res.Allowed && !d.zone.DryRun
	}
	return left && !refused
}

// decideDenied decides the zones of ds not decided yet (an approximate
// zone may be) from the deny cache if every one holds a valid refusal at
// now, and reports whether it did.
func (h *Handler) decideDenied(ds []zoneDecision, now time.Time) bool {
	for i := range ds {
		if ds[i].state != stateNone {
			continue
		}
		res, ok := h.deny.lookup(&ds[i], now)
		if !ok {
			for j := range i {
				if ds[j].state == stateNone {
					ds[j].res = limiter.Result{}
				}
			}
			return false
		}
		ds[i].res = res
	}
	for i := range ds {
		if ds[i].state == stateNone {
			ds[i].state, ds[i].cached = stateStore, true
		}
	}
	return true
}

// approxSettle ends a request's part in the approximate zones: the units
// taken locally go back when the request is refused (all or nothing, as
// on the store), and an answer of the store refreshes the zone's counts.
//
// An answer of the store for a key holding units this process took but
// had not sent when the request went to the store (syncs fail: the entry
// went stale) is blind to them: the request passes only if the store had
// room for them too. When it had not, the request is refused and the units
// the store charged for it go back to the local count, as an offset (a
// zone decided exactly in the same call keeps its charge: an error of one
// request, on the safe side, only while syncs fail).
func (h *Handler) approxSettle(ds []zoneDecision) {
	storeRefused := false // the store's call charged nothing
	for i := range ds {
		storeRefused = storeRefused || ds[i].state == stateStore && ds[i].refused()
	}
	// The store's answers first: they may refuse the request.
	// (An answer of the deny cache is no news: its clock is local time
	// added to the store's, not the store's.)
	var charged [4]bool // by index, for the usual ≤ 4 zones; more: never given back
	var got time.Time
	for i := range ds {
		d := &ds[i]
		if d.held == nil || d.state != stateStore || d.cached {
			continue
		}
		if got.IsZero() {
			got = time.Now()
		}
		t := d.zone.approx
		t.learn(d.ask.Key, d.ask.Limit, d.res, got, d.uncharged(storeRefused), d.held, d.ask.Cost)
		d.held = nil
		if !d.res.Allowed {
			continue
		}
		if i < len(charged) {
			charged[i] = !storeRefused && d.ask.Cost > 0
		}
		if d.unsent > 0 && d.res.Remaining < d.unsent {
			d.res.Allowed, d.res.Remaining = false, 0
			d.res.RetryAfter = max(time.Duration(t.next.Load()-got.UnixNano()), time.Microsecond)
		}
	}
	refused := false
	for i := range ds {
		refused = refused || ds[i].refused() || ds[i].state == stateFailClosed ||
			ds[i].state == stateOverloaded && !ds[i].zone.DryRun // refused with 503
	}
	for i := range ds {
		d := &ds[i]
		t := d.zone.approx
		switch {
		case t == nil:
		case d.state == stateApprox && refused && d.res.Allowed && d.ask.Cost > 0,
			i < len(charged) && charged[i] && refused:
			t.give(d.ask.Key, d.ask.Cost)
		case d.held != nil: // not decided by the store
			t.end(d.held, d.ask.Cost)
		}
	}
}

// uncharged is the units of an approximate zone's ask the store's call
// did not charge though the zone passed: another zone refused.
func (d *zoneDecision) uncharged(storeRefused bool) int64 {
	if d.res.Allowed && storeRefused {
		return d.ask.Cost
	}
	return 0
}

// callStore makes one decision on the store under the timeout and the
// circuit breaker, and records its latency (from start) and failure.
func (h *Handler) callStore(parent context.Context, asks []limiter.Ask, start time.Time) ([]limiter.Result, error) {
	if h.inProcess { // no I/O: nothing to time out, to break or to time
		results, err := h.store.Decide(parent, asks)
		if err != nil {
			return nil, fmt.Errorf("rate limit store: %w", err)
		}
		return results, nil
	}
	ok, probe := h.breaker.allow(parent)
	if !ok {
		return nil, errBreakerOpen
	}
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
		switch {
		case errors.Is(err, limiter.ErrNotReady) && h.breaker.rec != nil:
			// No connection: dialling is not deciding. No failure is
			// counted; the requests after it wait for the store to be
			// ready (see recovery.go).
			metrics.storeErrors.Inc()
			h.breaker.notReady()
		case parent.Err() == nil && !errors.Is(err, limiter.ErrInvalidAsk) && !errors.Is(err, limiter.ErrOverloaded):
			metrics.storeErrors.Inc()
			h.breaker.failure(probe)
		default:
			h.breaker.release(probe) // no verdict on the store
		}
		return nil, fmt.Errorf("rate limit store: %w", err)
	}
	h.breaker.success(probe)
	return results, nil
}

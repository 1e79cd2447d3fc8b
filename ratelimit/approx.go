package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// approxTable is the in-process side of one `approximate` zone on the
// Redis store: per key, the quota Redis had left at the last sync, and the
// units this process took since, not yet sent. A request whose key has a
// fresh entry is decided here, with no round trip; every interval the
// units taken are sent to Redis in one call per chunk of keys (absorbed:
// charged whole, even past the quota) and each key's state comes back.
//
// The overshoot bound: between two syncs, this process allows at most
// ⌈remaining/instances⌉ units of a key, remaining being what Redis had
// left at the last sync. Every unit allowed is charged at the next sync,
// past the quota if other instances took the rest meanwhile: the state
// then goes into debt, which refills repay before anything more is
// allowed, so the overshoot of one interval does not repeat and the rate
// over time holds. Past the quota, each instance overshoots by at most its
// share of one interval; `instances` set to the number of Caddy instances
// keeps the shares small.
//
// A key with no entry, or whose entry is approxStaleSyncs intervals old
// while syncs fail, is decided on Redis through the handler's usual path
// (timeout, breaker, on_error); its answer refreshes the entry. Units
// taken locally are never dropped by a failed sync: they are sent again
// with the next one. A table is carried over a config reload with its zone
// (see carryover.go): the handlers of both configs use it meanwhile, and
// the last to go sends what is left, once.
type approxTable struct {
	interval  time.Duration
	instances int64
	maxKeys   int64
	// owner: the store the syncs go to and where their failures are
	// logged, the newest handler's (see zoneState.own).
	owner atomic.Pointer[approxOwner]

	syncMu  sync.Mutex // one sync at a time
	entries sync.Map   // store key -> *approxEntry
	n       atomic.Int64
	next    atomic.Int64 // the next sync, Unix ns
	failing atomic.Bool  // the last sync failed

	stop chan struct{}
	done chan struct{}
}

// approxOwner is what a table's syncs use of one handler.
type approxOwner struct {
	handler   *Handler
	store     limiter.Absorber
	onFailure func(error) // a sync failed (logged at most once a second)
	// onFirst: a sync found a key exhausted, first in its window (see
	// events.go); nil: the store is not asked to tell
	onFirst func(storeKey string, res limiter.Result)
}

// approxEntry is one key of an approxTable.
type approxEntry struct {
	mu        sync.Mutex
	limit     limiter.Limit
	remaining int64          // what Redis had left at its answer (got); < 0: a debt
	used      int64          // units taken here since, not yet sent
	sending   int64          // units taken here, in a sync under way
	inflight  int64          // units of requests being decided on the store
	res       limiter.Result // Redis' answer at got
	got       time.Time      // zero: no answer yet (the entry only holds units)
	touched   bool           // a request used it since the last sync
	dead      bool           // dropped from the table: not to be used
}

// approxStaleSyncs is how many intervals an entry stays usable without a
// successful sync, once syncs fail.
const approxStaleSyncs = 3

// approxClockBack: an answer of the store older than the one held by more
// than this means the store's clock went back. No answer is held up in
// this process that long.
const approxClockBack = 5 * time.Second

// approxSyncTimeout bounds one sync's calls. Generous: a call that times
// out after Redis ran it is sent again, and its units charged twice.
const approxSyncTimeout = time.Second

func newApproxTable(interval time.Duration, instances, maxKeys int, store limiter.Absorber, onFailure func(error)) *approxTable {
	if maxKeys <= 0 {
		maxKeys = limiter.DefaultMaxKeys
	}
	t := &approxTable{
		interval:  interval,
		instances: int64(max(instances, 1)),
		maxKeys:   int64(maxKeys),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	t.owner.Store(&approxOwner{store: store, onFailure: onFailure})
	t.next.Store(time.Now().Add(interval).UnixNano())
	go t.run()
	return t
}

// run syncs every interval until close.
func (t *approxTable) run() {
	defer close(t.done)
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case now := <-tick.C:
			t.next.Store(now.Add(t.interval).UnixNano())
			t.sync(false)
		}
	}
}

// close stops the syncs and sends what is left to send.
func (t *approxTable) close() {
	if t == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.sync(true)
}

// take decides one ask from the key's entry at now, charging it locally
// when allowed. ok is false when there is no fresh entry for this limit:
// the store must decide.
func (t *approxTable) take(a limiter.Ask, now time.Time) (res limiter.Result, ok bool) {
	v, found := t.entries.Load(a.Key)
	if !found {
		return limiter.Result{}, false
	}
	e := v.(*approxEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dead || e.got.IsZero() || e.limit != a.Limit {
		return limiter.Result{}, false
	}
	age := now.Sub(e.got)
	if age > approxStaleSyncs*t.interval && t.failing.Load() {
		return limiter.Result{}, false // Redis fails: decide there, on_error applies
	}
	e.touched = true
	res = limiter.Result{Reset: max(e.res.Reset-age, 0), Now: e.res.Now.Add(age)}
	need := max(a.Cost, 1)
	if need > a.Limit.Capacity() { // refused whatever is left, as the stores do
		res.RetryAfter = a.Limit.Window
		return res, true
	}
	share := e.remaining
	if t.instances > 1 {
		share = (e.remaining + t.instances - 1) / t.instances
	}
	// Requests being decided on the store may have been charged there
	// already, unknown to remaining: they count until their answer.
	left := share - e.used - e.sending - e.inflight
	if left >= need {
		e.used += a.Cost
		res.Allowed, res.Remaining = true, left-a.Cost
		return res, true
	}
	// Nothing changes here before the next sync.
	res.Remaining = max(left, 0)
	res.RetryAfter = max(time.Duration(t.next.Load()-now.UnixNano()), time.Microsecond)
	if e.remaining < need {
		res.RetryAfter = max(res.RetryAfter, e.res.RetryAfter-age)
	}
	return res, true
}

// give returns units a take charged, for a request another zone refused.
func (t *approxTable) give(key string, units int64) {
	t.update(key, limiter.Limit{}, false, func(e *approxEntry) {
		e.used -= units // below 0: an offset for the next units taken
	})
}

// charge takes units for key under limit whatever is Left: a count_status
// zone's charge after the response.
func (t *approxTable) charge(key string, limit limiter.Limit, units int64) {
	t.update(key, limit, true, func(e *approxEntry) { e.used += units })
}

// begin counts units of a request about to be decided on the store for
// key, so that the requests decided here meanwhile leave them out. The
// entry returned (nil when the table is full) goes to learn or end.
// unsent is the units taken here and not known to be sent: the store,
// deciding the request, cannot see them (those taken while it decides
// leave room for the request, as counted here).
func (t *approxTable) begin(key string, limit limiter.Limit, units int64) (held *approxEntry, unsent int64) {
	t.update(key, limit, true, func(e *approxEntry) {
		e.inflight += units
		held, unsent = e, max(e.used, 0)+e.sending
	})
	return held, unsent
}

// end uncounts units counted by begin on e, whatever the store answered.
func (t *approxTable) end(e *approxEntry, units int64) {
	e.mu.Lock()
	e.inflight -= units
	e.mu.Unlock()
}

// learn records the store's exact answer for key: res, received at got,
// with units not charged by that call (a request another zone refused)
// added back to its remaining; and, in the same step, ends the units
// begin counted on held (nil: none).
func (t *approxTable) learn(key string, limit limiter.Limit, res limiter.Result, got time.Time, uncharged int64, held *approxEntry, units int64) {
	t.update(key, limit, true, func(e *approxEntry) {
		if e == held {
			e.inflight -= units
			held = nil
		}
		e.touched = true
		left := res.Left + uncharged
		if e.limit == limit && !t.newer(e, res, left) {
			return
		}
		e.limit, e.remaining, e.res, e.got = limit, left, res, got
	})
	if held != nil { // dropped meanwhile, or the table is full
		t.end(held, units)
	}
}

// newer reports whether an answer of the store, res with left units left,
// is newer than the one e holds. Answers come back out of order
// (concurrent requests, a sync, a coalesced batch decided at one instant):
// the store's clock orders them, and of two at one instant the one with
// less left is the later. An answer older by more than approxClockBack is
// taken as newer: the store's clock went back (a failover), and the entry
// must not stay pinned to the old clock.
func (t *approxTable) newer(e *approxEntry, res limiter.Result, left int64) bool {
	switch {
	case e.got.IsZero() || e.res.Now.Sub(res.Now) > approxClockBack:
		return true
	case res.Now.Equal(e.res.Now):
		return left < e.remaining
	}
	return res.Now.After(e.res.Now)
}

// update runs f on key's live entry under its lock, creating it (for
// limit) when create is set and the table has room.
func (t *approxTable) update(key string, limit limiter.Limit, create bool, f func(*approxEntry)) {
	for {
		v, found := t.entries.Load(key)
		if !found {
			if !create || t.n.Load() >= t.maxKeys {
				return
			}
			var loaded bool
			if v, loaded = t.entries.LoadOrStore(key, &approxEntry{limit: limit}); !loaded {
				t.n.Add(1)
			}
		}
		e := v.(*approxEntry)
		e.mu.Lock()
		if !e.dead {
			f(e)
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		t.entries.CompareAndDelete(key, e) // dropped meanwhile: make a new one
	}
}

// forget drops keys with what they hold (an admin reset).
func (t *approxTable) forget(keys ...string) {
	for _, k := range keys {
		if v, ok := t.entries.LoadAndDelete(k); ok {
			e := v.(*approxEntry)
			e.mu.Lock()
			e.dead = true
			e.mu.Unlock()
			t.n.Add(-1)
		}
	}
}

// sync sends the units taken since the last sync, refreshes the entries
// used since, and drops those idle for a whole interval. final (cleanup)
// sends units only.
func (t *approxTable) sync(final bool) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	var asks []limiter.Ask
	var sent []*approxEntry
	o := t.owner.Load()
	t.entries.Range(func(k, v any) bool {
		e := v.(*approxEntry)
		e.mu.Lock()
		defer e.mu.Unlock()
		switch {
		case e.used > 0 || e.touched && !final:
			// A negative count (units given back after the sync that sent
			// them) stays, to offset the next units taken.
			units := max(e.used, 0)
			asks = append(asks, limiter.Ask{Key: k.(string), Limit: e.limit, Cost: units, Notify: o.onFirst != nil})
			e.sending, e.used, e.touched = units, e.used-units, false
			sent = append(sent, e)
		case !final && e.sending == 0 && e.inflight == 0:
			e.dead = true
			if t.entries.CompareAndDelete(k, e) {
				t.n.Add(-1)
			}
		}
		return true
	})
	if len(asks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), approxSyncTimeout)
	defer cancel()
	results, err := o.store.Absorb(ctx, asks)
	got := time.Now()
	t.failing.Store(err != nil)
	if err != nil {
		metrics.storeErrors.Inc()
		if o.onFailure != nil {
			o.onFailure(err)
		}
	}
	for i, e := range sent {
		if results != nil && results[i].First && o.onFirst != nil {
			o.onFirst(asks[i].Key, results[i])
		}
		e.mu.Lock()
		if results == nil || results[i].Now.IsZero() { // not sent: next time
			e.used += e.sending
		} else if t.newer(e, results[i], results[i].Left) {
			e.remaining, e.res, e.got = results[i].Left, results[i], got
		} // else the answer held is later: it counts the units sent
		e.sending = 0
		e.mu.Unlock()
	}
}

// approxWarn logs a failed sync of zone at most once a second.
func (h *Handler) approxWarn(zone string) func(error) {
	return func(err error) {
		suppressed, ok := h.warn.allow(time.Now())
		if !ok {
			return
		}
		h.logger.Warn("rate limit approximate sync failed; local counts kept for the next",
			zap.String("zone", zone), zap.Error(err), zap.Int64("suppressed", suppressed))
	}
}

// provisionApprox starts the tables of the approximate zones, when the
// store can take their counts (Redis), or takes over those of the previous
// config (see carryover.go).
func (h *Handler) provisionApprox() {
	a, ok := h.store.(limiter.Absorber)
	if !ok {
		return
	}
	for i, z := range h.Zones {
		if z.Approximate > 0 {
			o := &approxOwner{handler: h, store: a, onFailure: h.approxWarn(z.Name)}
			if z.notify {
				o.onFirst = h.approxExceeded(z)
			}
			z.approx = h.carried[i].ownApprox(o, func() *approxTable {
				return newApproxTable(time.Duration(z.Approximate), h.Instances, h.MaxKeys, a, o.onFailure)
			})
			h.approx = true
		}
	}
}

package ratelimit

import (
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// denyCacheSize bounds the refused keys one zone remembers.
const denyCacheSize = 10000

// denyCache remembers the keys the Redis store refused, so that a refused
// client hammering the limit is answered in process, with no round trip,
// until the store could allow it again. It is exact, never a guess:
//
//   - An entry is used only until the request that learned it was sent
//     plus the store's RetryAfter. The store decided after the request was
//     sent, so that moment is never later than the real retry time: past
//     it, requests go to the store again. Retry-After, on the contrary,
//     counts from when the answer came back, so it is never earlier than
//     the real wait.
//   - Only the same key with the same limit (algorithm, events, window,
//     burst) and a cost at least as large is answered: a larger cost is
//     refused at least as long. A cost 0 check (count_status zones) is
//     remembered like any other: nothing frees quota before RetryAfter,
//     since every algorithm's state only refills with time.
//   - A request is answered locally only when every zone that applies to
//     it holds a valid entry and none is dry_run: otherwise the store must
//     decide (another zone might refuse longer, or charge).
//   - Refusals decided by the `local` fallback or a dry_run zone are never
//     remembered; on Redis Cluster, a handler with several zones and no
//     hash_tag keeps no cache, since a request there may see another
//     request's charge before its refund.
//
// The one thing that frees quota other than time is a reset through the
// admin API: it must call forgetDenied on this process's handlers; a reset
// made on another Caddy instance reaches this one's cache only at the
// cached retry time. A refusal by a ban is remembered for at most
// banDenyFor, so that a ban lifted through any instance reaches this one
// within it.
//
// Bans: every refusal of a zone with `ban` must count as an offence, in
// the store's one count shared by all instances. So a refusal that is an
// offence towards a ban (not yet banned) is not remembered: the key's next
// request goes to the store, which counts it. The bound: per key and
// window, at most `after` refusals reach the store before the ban is set
// (the after-th sets it); then, while banned, one request per instance
// per banDenyFor. A key refused fewer than `after` times per window
// costs a store call per refusal, as without the cache. Keys exempt from
// bans (ban_exempt) are remembered as in any zone.
//
// Remaining, in the headers of a locally answered request, is the value
// the store gave with its refusal. Clocks: local monotonic time only; the
// store's clock is read from its answer (limiter.Result.Now), aged by the local
// time elapsed since.
//
// Each zone remembers its refusals in its own table, carried over a config
// reload with the zone's other in-process state (see carryover.go).
type denyCache struct {
	tables map[*Zone]*denyTable
}

// denyTable is one zone's remembered refusals, by store key.
type denyTable struct {
	entries *otter.Cache[string, denial]
}

// denial is one remembered refusal.
type denial struct {
	limit limiter.Limit
	cost  int64
	res   limiter.Result // the store's answer
	got   time.Time      // when the answer came back
	until time.Time      // sent + RetryAfter: answered locally before this
}

func newDenyTable() *denyTable {
	return &denyTable{entries: otter.Must(&otter.Options[string, denial]{MaximumSize: denyCacheSize})}
}

// remember records the refusals the store gave for ds, asked at sent and
// answered at got (zero: now, read only when there is a refusal to record).
func (c *denyCache) remember(ds []zoneDecision, sent, got time.Time) {
	for i := range ds {
		d := &ds[i]
		t := c.tables[d.zone]
		if t == nil || d.state != stateStore || d.res.Allowed || d.zone.DryRun || d.res.RetryAfter <= 0 ||
			d.ask.Limit.Algorithm == limiter.Concurrency { // a slot comes back when a request ends
			continue
		}
		if d.ask.Ban.Duration > 0 && !d.res.Banned {
			continue // an offence towards a ban: the next refusal must reach the store to count
		}
		wait := d.res.RetryAfter
		if d.res.Banned { // a ban may be lifted: asked again within banDenyFor
			wait = min(wait, banDenyFor)
		}
		if got.IsZero() {
			got = time.Now()
		}
		t.entries.Set(d.ask.Key, denial{
			limit: d.ask.Limit,
			cost:  d.ask.Cost,
			res:   d.res,
			got:   got,
			until: sent.Add(wait),
		})
	}
}

// lookup is the refusal the cache holds for d's ask at now, if a valid
// one (same quota, a cost at least as large, not yet expired).
func (c *denyCache) lookup(d *zoneDecision, now time.Time) (limiter.Result, bool) {
	t := c.tables[d.zone]
	if t == nil || d.zone.DryRun || d.ask.Limit.Algorithm == limiter.Concurrency {
		return limiter.Result{}, false
	}
	e, ok := t.entries.GetIfPresent(d.ask.Key)
	if !ok || e.limit != d.ask.Limit || d.ask.Cost < e.cost {
		return limiter.Result{}, false
	}
	if !now.Before(e.until) {
		t.entries.Invalidate(d.ask.Key)
		return limiter.Result{}, false
	}
	return e.resultAt(now), true
}

// resultAt is the refusal as of now: the wait counted from when the
// store's answer came back, so never shorter than the real one.
func (e *denial) resultAt(now time.Time) limiter.Result {
	age := now.Sub(e.got)
	return limiter.Result{
		Remaining:  e.res.Remaining,
		RetryAfter: max(e.res.RetryAfter-age, time.Microsecond),
		Reset:      max(e.res.Reset-age, 0),
		Now:        e.res.Now.Add(age),
	}
}

// forget drops keys (full store keys): an admin reset must reach the
// store's next answer at once.
func (c *denyCache) forget(keys ...string) {
	for _, t := range c.tables {
		for _, k := range keys {
			t.entries.Invalidate(k)
		}
	}
}

// forgetDenied drops keys (full store keys) from the handler's deny
// cache, and the local counts of its approximate zones: the admin API's
// reset calls it with the keys it deleted.
func (h *Handler) forgetDenied(keys ...string) {
	if h.deny != nil {
		h.deny.forget(keys...)
	}
	for _, z := range h.Zones {
		if z.approx != nil {
			z.approx.forget(keys...)
		}
	}
}

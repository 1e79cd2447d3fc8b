package limiter

import (
	"context"
	"fmt"
	"time"
)

// Settling: a request whose real cost is known only after its response
// (the handler's `cost_after`) was admitted at a pre-charged cost; when
// its response ends, the difference is charged, past the quota if need be
// (the key goes into debt that refills repay before anything more is
// allowed), or given back. A settlement goes to the store with the
// request's concurrency leases, if any, in one call (one per Redis Cluster
// slot).

// MaxDebtSpan bounds how long a token bucket's debt takes to repay: 10
// years of refills. A debt past it, or past MaxEvents units, is cut there
// (a window's count past its quota is cut at events + MaxEvents), so that
// every number the stores handle stays exact and every TTL within bounds.
const MaxDebtSpan = MaxWindow

// maxDebtUs is MaxDebtSpan in microseconds, as the script has it.
const maxDebtUs = float64(MaxDebtSpan / time.Microsecond)

// Settlement is one zone's settlement of one request.
type Settlement struct {
	Key   string // the full store key (see StoreKey)
	Limit Limit  // the quota the request was admitted under
	// Delta: units to charge (> 0, whatever is left) or to give back (< 0:
	// only to the window the request was charged in; a token bucket never
	// above its capacity). At most MaxEvents either way.
	Delta int64
	// Thresholds: as the Ask's (see Ask.Thresholds); a charge (Delta > 0)
	// tells the marks it crossed first in the period.
	Thresholds []int64
	// Usage: as the Ask's; the settled units count in its usage.
	Usage Usage
}

// SettleResult is what a settlement's charge crossed: the thresholds (bit
// i for Thresholds[i]) first reached in the period, and the count it
// brought the period to (when Crossed is not 0).
type SettleResult struct {
	Crossed uint8
	Used    int64
}

// Settler is implemented by stores that settle: both stores.
type Settler interface {
	// Settle applies every settlement and gives back the leases, for a
	// request admitted at at (the store's clock: Result.Now). Only
	// token_bucket, sliding_window and fixed_window quotas settle; others
	// are an ErrInvalidAsk and nothing is settled. The results are in
	// settles' order (nil when none crossed a threshold).
	Settle(ctx context.Context, at time.Time, settles []Settlement, leases []Lease) ([]SettleResult, error)
}

// settleParams validates a settlement and converts it: its cost is the
// magnitude of Delta.
func settleParams(s Settlement) (params, error) {
	units := s.Delta
	if units < 0 {
		units = -units
	}
	if units > MaxEvents || units < 0 { // -MinInt64 stays negative
		return params{}, fmt.Errorf("%w: settlement of %d units past 2^50", ErrInvalidAsk, s.Delta)
	}
	p, err := paramsOf(Ask{Key: s.Key, Limit: s.Limit, Cost: units, Thresholds: s.Thresholds, Usage: s.Usage})
	if err != nil {
		return p, err
	}
	switch p.code {
	case codeTokenBucket, codeFixedWindow, codeSlidingWindow:
		return p, nil
	}
	return p, fmt.Errorf("%w: %s quotas do not settle", ErrInvalidAsk, s.Limit.Algorithm)
}

// debtFloor is the fewest tokens a bucket may hold after a forced charge.
func debtFloor(capacity, rate float64) float64 {
	return max(capacity-rate*maxDebtUs, -float64(MaxEvents))
}

// force charges p.cost units to the entry at now whatever is left
// (mirrors the force functions of scripts/absorb.lua); it returns the
// marks of a fixed_window the charge crossed first (see thresholds.go).
func (e *memoryEntry) force(now int64, p params) (c int64) {
	ok := e.ok
	switch p.code {
	case codeTokenBucket:
		capacity := float64(p.events)
		if p.burst > 0 {
			capacity = float64(p.burst)
		}
		rate := float64(p.events) / float64(p.windowUs)
		st := e.bucket
		if !ok {
			st = tokenBucket{tokens: capacity, ts: now}
		}
		after := max(tokenLevel(st.tokens, st.ts, now, capacity, rate)-float64(p.cost), debtFloor(capacity, rate))
		e.bucket = tokenBucket{tokens: after, ts: now}
		e.expireAt = now + ceilUs((capacity-after)/rate) + secondUs
	case codeFixedWindow, codeSlidingWindow:
		var st windowCounters
		if ok {
			st = e.counters
		}
		start, cur, prev := slidingCounts(st, ok, now, p.windowUs)
		e.expireAt = start + p.windowUs
		if p.code == codeFixedWindow {
			prev = 0 // the marks told
			var end int64
			start, end = p.period(now)
			cur = 0
			if ok && st.start == start {
				cur, prev = st.cur, st.prev
			}
			e.expireAt = end
			c = crossed(p.marks, prev, cur+p.cost)
			prev |= c
		}
		e.counters = windowCounters{start: start, cur: min(cur+p.cost, p.events+MaxEvents), prev: prev}
		if p.code == codeSlidingWindow {
			e.expireAt += p.windowUs
		}
	}
	e.ok, e.p = true, p
	return c
}

// refund gives p.cost units back to the entry, charged at at (mirrors
// the refund functions of scripts/decide.lua); the expiry stays.
func (e *memoryEntry) refund(at int64, p params) {
	if !e.ok {
		return
	}
	switch p.code {
	case codeTokenBucket:
		capacity := float64(p.events)
		if p.burst > 0 {
			capacity = float64(p.burst)
		}
		e.bucket.tokens = min(e.bucket.tokens+float64(p.cost), capacity)
	case codeFixedWindow, codeSlidingWindow:
		start, _ := p.period(at)
		switch {
		case e.counters.start == start:
			e.counters.cur = max(e.counters.cur-p.cost, 0)
		case e.counters.start == start+p.windowUs && p.code == codeSlidingWindow:
			e.counters.prev = max(e.counters.prev-p.cost, 0)
		}
	}
}

// Settle implements Settler.
func (s *MemoryStore) Settle(ctx context.Context, at time.Time, settles []Settlement, leases []Lease) ([]SettleResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ps := make([]params, len(settles))
	for i := range settles {
		var err error
		if ps[i], err = settleParams(settles[i]); err != nil {
			return nil, err
		}
	}
	now := s.now().UnixMicro()
	withCalendar(ps, now)
	var results []SettleResult
	s.mu.Lock()
	for i, st := range settles {
		if r := s.settle(st, ps[i], now, at.UnixMicro()); r.Crossed != 0 {
			if results == nil {
				results = make([]SettleResult, len(settles))
			}
			results[i] = r
		}
	}
	s.mu.Unlock()
	return results, s.Release(ctx, leases)
}

// settle applies one settlement; s is locked.
func (s *MemoryStore) settle(st Settlement, p params, now, at int64) SettleResult {
	e := s.lookup(st.Key, p.code, now)
	switch {
	case st.Delta > 0:
		if e == nil {
			e = s.add(st.Key, p.code, now)
		}
		if p.usage.on() {
			s.recordUsage(st.Key, p, now, now, st.Delta, 0)
		}
		if c := e.force(now, p); c != 0 {
			return SettleResult{Crossed: uint8(c), Used: e.counters.cur}
		}
	case st.Delta < 0 && e != nil:
		if p.usage.on() {
			s.recordUsage(st.Key, p, at, now, st.Delta, 0)
		}
		e.refund(at, p)
	}
	return SettleResult{}
}

// Settle implements Settler: each settlement and lease on the store of
// its zone.
func (m *ZoneMemory) Settle(ctx context.Context, at time.Time, settles []Settlement, leases []Lease) ([]SettleResult, error) {
	var results []SettleResult
	for i := range settles {
		p := m.part(settles[i].Key)
		if p == nil {
			return results, fmt.Errorf("settlement %d: no zone of this handler", i)
		}
		r, err := p.Settle(ctx, at, settles[i:i+1], nil)
		if err != nil {
			return results, err
		}
		if r != nil {
			if results == nil {
				results = make([]SettleResult, len(settles))
			}
			results[i] = r[0]
		}
	}
	return results, m.Release(ctx, leases)
}

var (
	_ Settler = (*MemoryStore)(nil)
	_ Settler = (*ZoneMemory)(nil)
)

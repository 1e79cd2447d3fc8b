package limiter

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// The bounds of the numbers a quota is made of. A value is checked where
// it enters: the Caddyfile and JSON at load (refused, with its line), a
// plan row when the table is read (skipped, with a warning), a placeholder
// per request (status 500) and the cost per request (a cost past what the
// zone can grant is refused like any refusal). The stores check every Ask
// again with bounds at least as wide (checkParams): a value that reaches
// them out of bounds is an ErrInvalidAsk, never a store failure.
//
// Why these numbers: the Redis script computes in Lua 5.1 numbers (IEEE
// doubles, exact integers up to 2^53) on times in microseconds since the
// epoch (about 2^50.7 today), and the memory store mirrors it. Counts stay
// below 2^50 + 2^51, times below now plus 100 years: every integer the
// script handles is exact, and every TTL it sends Redis an integer.
const (
	// MaxEvents bounds `events` and `burst`: 2^50 (1125899906842624).
	MaxEvents = 1 << 50

	// MaxWindow bounds `window`: 10 years (87600h).
	MaxWindow = 10 * 365 * 24 * time.Hour

	// MaxRefill bounds the time a token bucket takes to refill from empty,
	// capacity × window / events (capacity: `burst`, default `events`):
	// 10 years. A key's state lives that long in the store.
	MaxRefill = MaxWindow

	// MaxQueueWait bounds a leaky bucket's longest wait in its queue,
	// burst × window / events: 24h. The handler holds a queued request
	// that long before passing it on.
	MaxQueueWait = 24 * time.Hour

	// MaxSlidingLogEvents bounds a sliding_log zone's `events`: 10000. The
	// log keeps one entry per unit taken, so a key's memory and the work of
	// one request (cost entries written) grow with it; larger quotas fit
	// sliding_window.
	MaxSlidingLogEvents = 10_000

	// MinLeaseTTL and MaxLeaseTTL bound a concurrency zone's lease_ttl:
	// 1s to 24h. Leases are refreshed every third of it.
	MinLeaseTTL = time.Second
	MaxLeaseTTL = 24 * time.Hour

	// MaxLeaseIDLen bounds a lease id (see NewLeaseID).
	MaxLeaseIDLen = 64

	// maxStoreCost is the largest cost a store accepts: 2^51, past every
	// quota's largest cost (a leaky bucket's burst + 1), so that the
	// handler can ask the store to refuse any cost past the quota.
	maxStoreCost = 1 << 51

	// maxStoreSpan bounds how long a key's state lives in a store (its
	// TTL): 100 years, so that now + it stays below 2^53 µs until 2150.
	// Wider than the handler's own bounds: a brake (factor >= 0.001) on a
	// quota within them stays within it (a token bucket's refill grows by
	// at most one window, a leaky bucket's queue wait by at most 1000×).
	maxStoreSpan = 100 * 365 * 24 * time.Hour
)

// algorithmCode is the code of an algorithm name ("" is the default).
func algorithmCode(name string) (int, bool) {
	switch name {
	case TokenBucket, "":
		return codeTokenBucket, true
	case SlidingWindow:
		return codeSlidingWindow, true
	case FixedWindow:
		return codeFixedWindow, true
	case SlidingLog:
		return codeSlidingLog, true
	case LeakyBucket:
		return codeLeakyBucket, true
	case Concurrency:
		return codeConcurrency, true
	}
	return 0, false
}

// MaxCost is the largest cost a decision under l can ever allow, with the
// key's state fresh: a token bucket's capacity, a leaky bucket's queue plus
// the request itself (burst + 1), else events. A larger cost is refused
// whatever the key's state.
func (l Limit) MaxCost() int64 {
	if l.Algorithm == LeakyBucket {
		return l.Burst + 1
	}
	return l.Capacity()
}

// CheckEvents checks a value of `events` or `burst` (field names it).
func CheckEvents(field string, n int64) error {
	if n > MaxEvents {
		return fmt.Errorf("%s %d: must be at most 2^50 (%d)", field, n, int64(MaxEvents))
	}
	return nil
}

// CheckWindow checks a value of `window`.
func CheckWindow(w time.Duration) error {
	if w < time.Millisecond || w > MaxWindow {
		return fmt.Errorf("window %s: must be at least 1ms and at most %s (10 years)", w, MaxWindow)
	}
	return nil
}

// CheckLimit checks a whole quota (events > 0, burst >= 0, a known
// algorithm) against the bounds: each field alone, then what they make
// together. Every quota the handler applies passes it before the store is
// asked.
func CheckLimit(l Limit) error {
	if _, ok := algorithmCode(l.Algorithm); !ok {
		return fmt.Errorf("unknown algorithm %q", l.Algorithm)
	}
	switch {
	case l.Events <= 0:
		return fmt.Errorf("events %d: must be > 0", l.Events)
	case l.Burst < 0:
		return fmt.Errorf("burst %d: must be >= 0", l.Burst)
	}
	if err := CheckEvents("events", l.Events); err != nil {
		return err
	}
	if err := CheckEvents("burst", l.Burst); err != nil {
		return err
	}
	if err := CheckWindow(l.Window); err != nil {
		return err
	}
	w := l.Window.Truncate(time.Millisecond) // what the stores use
	switch {
	case l.Algorithm == Concurrency && (w < MinLeaseTTL || w > MaxLeaseTTL):
		return fmt.Errorf("lease_ttl %s: must be at least %s and at most %s", l.Window, MinLeaseTTL, MaxLeaseTTL)
	case l.Algorithm == SlidingLog && l.Events > MaxSlidingLogEvents:
		return fmt.Errorf("events %d: sliding_log keeps one entry per unit, must be at most %d", l.Events, MaxSlidingLogEvents)
	case l.BucketBurst() && !fits(l.Burst, w, l.Events, MaxRefill):
		return fmt.Errorf("burst %d with events %d per %s: the bucket refills in %s, must be at most %s (10 years)",
			l.Burst, l.Events, l.Window, span(l.Burst, w, l.Events), MaxRefill)
	case l.Algorithm == LeakyBucket && !fits(l.Burst, w, l.Events, MaxQueueWait):
		return fmt.Errorf("burst %d with events %d per %s: the queue's longest wait is %s, must be at most %s",
			l.Burst, l.Events, l.Window, span(l.Burst, w, l.Events), MaxQueueWait)
	}
	return nil
}

// checkParams is the stores' check of one Ask: wider than CheckLimit,
// only what their arithmetic needs (see maxStoreSpan).
func checkParams(p params) error {
	switch {
	case p.events <= 0:
		return fmt.Errorf("events must be > 0, got %d", p.events)
	case p.windowUs <= 0:
		return fmt.Errorf("window must be at least 1ms, got %dµs", p.windowUs)
	case p.burst < 0:
		return fmt.Errorf("burst must be >= 0, got %d", p.burst)
	case p.cost < 0:
		return fmt.Errorf("cost must be >= 0, got %d", p.cost)
	case p.events > MaxEvents || p.burst > MaxEvents:
		return fmt.Errorf("events %d or burst %d past 2^50", p.events, p.burst)
	case p.cost > maxStoreCost:
		return fmt.Errorf("cost %d past 2^51", p.cost)
	case p.windowUs > MaxWindow.Microseconds():
		return fmt.Errorf("window %dµs past %s", p.windowUs, MaxWindow)
	}
	if p.code == codeConcurrency {
		return checkLease(p)
	}
	w := time.Duration(p.windowUs) * time.Microsecond
	var units int64 // the state's life, in windows per events
	switch p.code {
	case codeTokenBucket:
		units = p.events
		if p.burst > 0 {
			units = p.burst
		}
	case codeLeakyBucket:
		units = p.burst + 1
	}
	if !fits(units, w, p.events, maxStoreSpan) {
		return fmt.Errorf("burst %d with events %d per %s: state would live %s, past %s", p.burst, p.events, w, span(units, w, p.events), maxStoreSpan)
	}
	return nil
}

// fits reports whether units × w / events <= limit, exactly (128 bits).
func fits(units int64, w time.Duration, events int64, limit time.Duration) bool {
	hi, lo := bits.Mul64(uint64(units), uint64(w))
	lhi, llo := bits.Mul64(uint64(limit), uint64(events))
	return hi < lhi || hi == lhi && lo <= llo
}

// span is units × w / events, for messages (saturated).
func span(units int64, w time.Duration, events int64) time.Duration {
	s := float64(units) * float64(w) / float64(events)
	if s >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s).Round(time.Millisecond)
}

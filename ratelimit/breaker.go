package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// failureMode is what a zone does when the store fails.
type failureMode uint8

const (
	failOpen   failureMode = iota // pass the request, log a warning
	failClosed                    // refuse with 503 and Retry-After: 1
	failLocal                     // decide with the in-process limiter at events/instances
)

func parseFailureMode(s string) (failureMode, error) {
	switch s {
	case "", "open":
		return failOpen, nil
	case "closed":
		return failClosed, nil
	case "local":
		return failLocal, nil
	}
	return 0, fmt.Errorf("invalid on_error %q: must be open, closed or local", s)
}

// Circuit breaker settings: the store is skipped for breakerCooldown when
// its failures over the current and the previous second are at least
// breakerThreshold AND at least breakerRatio of its calls in that span;
// then one request probes it: a success closes the breaker, a failure
// opens it again, a probe that ends without a verdict (its client left,
// the process was overloaded) lets the next request probe. A handful of
// timeouts among many answers never opens it; an outage (every call
// fails: refused connections, a stall) opens it after breakerThreshold.
const (
	breakerThreshold = 5
	breakerRatio     = 0.5
	breakerCooldown  = time.Second
)

// errBreakerOpen is the store error of a request that skipped the store.
var errBreakerOpen = errors.New("store skipped: circuit breaker open after repeated failures")

// breakerSecond counts the store calls that ended in one second.
type breakerSecond struct {
	sec      atomic.Int64 // Unix second counted (0: none yet)
	ok, fail atomic.Int64
}

// breaker is one handler's circuit breaker around its store.
type breaker struct {
	now func() time.Time

	open atomic.Bool // false is the lock-free fast path
	// seconds: the current and the previous second, by parity
	seconds [2]breakerSecond

	mu        sync.Mutex
	openUntil time.Time
	probing   bool

	// rec, when the store can say it is ready again (Redis), replaces the
	// probe by a request with a probe of the store's own (see recovery).
	rec   *recovery
	round *probeRound // the probe running
	next  *probeRound // the requests waiting for the probe after it
	// waits: requests wait for the probe's verdict, the store having
	// refused connections (else they get their failure mode at once)
	waits bool
	// timer starts the next probe at the cooldown's end; stopped: no
	// more, the handler is cleaned up
	timer   *time.Timer
	stopped bool

	// log, when set, hears the breaker open and close (rare: an outage's
	// start and end), with why and for how long
	log      *zap.Logger
	openedAt time.Time
	// gauge, when set, is caddy_ratelimit_breaker_open: moved by one on
	// each transition, never per request; counted (under mu) says it is in
	// it (open and not stopped), so a stopped handler leaves it for good
	gauge   prometheus.Gauge
	counted bool
}

// allow reports whether a request may call the store, and whether it is
// the probe (which must end in success, failure or release). With a
// recovery, an open breaker makes the request wait for the verdict of a
// probe that starts after it arrived (see recovery.go); it is never the
// probe itself.
func (b *breaker) allow(ctx context.Context) (ok, probe bool) {
	if !b.open.Load() {
		return true, false
	}
	if b.rec != nil {
		return b.await(ctx), false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open.Load() {
		return true, false
	}
	if b.probing || b.now().Before(b.openUntil) {
		return false, false
	}
	b.probing = true
	return true, true
}

// second returns the counts of sec, reset when they held an older second.
func (b *breaker) second(sec int64) *breakerSecond {
	s := &b.seconds[sec&1]
	if s.sec.Load() != sec {
		b.mu.Lock()
		if s.sec.Load() != sec {
			s.ok.Store(0)
			s.fail.Store(0)
			s.sec.Store(sec)
		}
		b.mu.Unlock()
	}
	return s
}

// counts returns the successes and failures of the current and the
// previous second.
func (b *breaker) counts(sec int64) (ok, fail int64) {
	for i := range b.seconds {
		s := &b.seconds[i]
		if d := sec - s.sec.Load(); d == 0 || d == 1 {
			ok += s.ok.Load()
			fail += s.fail.Load()
		}
	}
	return ok, fail
}

// success records a store call that answered; the probe's closes the
// breaker.
func (b *breaker) success(probe bool) {
	b.second(b.now().Unix()).ok.Add(1)
	if !probe {
		return
	}
	b.mu.Lock()
	b.closeLocked()
	b.mu.Unlock()
}

// closeLocked closes the breaker with a clean slate; b.mu is held.
func (b *breaker) closeLocked() {
	if b.open.Load() && b.log != nil {
		b.log.Info("rate limit store circuit breaker closed",
			zap.Duration("open_for", b.now().Sub(b.openedAt).Round(time.Millisecond)))
	}
	b.open.Store(false)
	b.uncountLocked()
	b.probing = false
	for i := range b.seconds { // a fresh start: old failures do not count
		b.seconds[i].ok.Store(0)
		b.seconds[i].fail.Store(0)
	}
}

// failure records a store call that failed; it opens the breaker when the
// failures reach the threshold and the ratio, or when the probe failed.
func (b *breaker) failure(probe bool) {
	now := b.now()
	sec := now.Unix()
	b.second(sec).fail.Add(1)
	if !probe {
		if b.open.Load() {
			return
		}
		ok, fail := b.counts(sec)
		if fail < breakerThreshold || float64(fail) < breakerRatio*float64(ok+fail) {
			return
		}
	}
	b.mu.Lock()
	if probe || !b.open.Load() {
		b.openLocked(now, "store calls failed", nil)
		b.openUntil = now.Add(breakerCooldown)
		b.probing = false
		b.waits = false
		if b.rec != nil && b.round == nil { // see recovery
			b.startLocked()
		}
	}
	b.mu.Unlock()
}

// openLocked opens the breaker, logging why when it was closed; b.mu is
// held.
func (b *breaker) openLocked(now time.Time, why string, err error) {
	if !b.open.Load() {
		b.openedAt = now
		if b.log != nil {
			b.log.Warn("rate limit store circuit breaker opened", zap.String("why", why), zap.Error(err))
		}
	}
	b.open.Store(true)
	if b.gauge != nil && !b.counted && !b.stopped {
		b.counted = true
		b.gauge.Inc()
	}
}

// uncountLocked takes the breaker out of caddy_ratelimit_breaker_open:
// it closed, or its handler was cleaned up; b.mu is held.
func (b *breaker) uncountLocked() {
	if b.counted {
		b.counted = false
		b.gauge.Dec()
	}
}

// release ends a probe without a verdict: the next request probes.
func (b *breaker) release(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// state is "closed", "open" or "probing", for tests and logs.
func (b *breaker) state() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.open.Load():
		return "closed"
	case b.probing:
		return "probing"
	default:
		return "open"
	}
}

// warnEvery is the most often a store failure is logged.
const warnEvery = time.Second

// warnLimiter rate-limits the store failure warnings of one handler.
type warnLimiter struct {
	last       atomic.Int64 // Unix nanoseconds of the last warning
	suppressed atomic.Int64 // warnings not logged since
}

// allow reports whether to log a warning now, and how many were
// suppressed since the last one.
func (l *warnLimiter) allow(now time.Time) (int64, bool) {
	n := now.UnixNano()
	last := l.last.Load()
	if n-last < int64(warnEvery) || !l.last.CompareAndSwap(last, n) {
		l.suppressed.Add(1)
		return 0, false
	}
	return l.suppressed.Swap(0), true
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

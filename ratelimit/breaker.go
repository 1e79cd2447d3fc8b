package ratelimit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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

// Circuit breaker settings: after breakerThreshold consecutive store
// failures the store is skipped for breakerCooldown, then one request
// probes it; a success closes the breaker, a failure opens it again.
const (
	breakerThreshold = 5
	breakerCooldown  = time.Second
)

// errBreakerOpen is the store error of a request that skipped the store.
var errBreakerOpen = errors.New("store skipped: circuit breaker open after repeated failures")

// breaker is one handler's circuit breaker around its store.
type breaker struct {
	now func() time.Time

	failures atomic.Int32 // consecutive; 0 is the lock-free fast path

	mu        sync.Mutex
	openUntil time.Time
	probing   bool
}

// allow reports whether a request may call the store.
func (b *breaker) allow() bool {
	if b.failures.Load() < breakerThreshold {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures.Load() < breakerThreshold {
		return true
	}
	if b.probing || b.now().Before(b.openUntil) {
		return false
	}
	b.probing = true
	return true
}

// success records a store call that answered.
func (b *breaker) success() {
	if b.failures.Load() == 0 {
		return
	}
	b.mu.Lock()
	b.failures.Store(0)
	b.probing = false
	b.mu.Unlock()
}

// failure records a store call that failed.
func (b *breaker) failure() {
	b.mu.Lock()
	n := b.failures.Add(1)
	if n >= breakerThreshold {
		b.openUntil = b.now().Add(breakerCooldown)
		b.probing = false
	}
	b.mu.Unlock()
}

// state is "closed", "open" or "probing", for tests and logs.
func (b *breaker) state() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.failures.Load() < breakerThreshold:
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

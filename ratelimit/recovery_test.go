package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// readyStore is a limiter.ReadyStore whose probe and warm-up answer what
// the test says, counting probes.
type readyStore struct {
	probes atomic.Int64
	probe  atomic.Pointer[error] // nil: success
	warm   func(ctx context.Context) error
}

func (s *readyStore) Probe(context.Context) error {
	s.probes.Add(1)
	if e := s.probe.Load(); e != nil {
		return *e
	}
	return nil
}

func (s *readyStore) Warm(ctx context.Context, _ int) error {
	if s.warm != nil {
		return s.warm(ctx)
	}
	return nil
}

func (s *readyStore) fail(err error) { s.probe.Store(&err) }

func recoveringBreaker(s *readyStore) *breaker {
	return &breaker{now: time.Now, rec: &recovery{store: s, conns: 1,
		dial: 50 * time.Millisecond, read: 50 * time.Millisecond}}
}

// A breaker opened by failures (a stall: no refusal) probes at once in
// the background; the store answering, the cooldown still stands (a slow
// store is not called again at once), and the breaker closes at its end
// with no request asking, so the first requests after the outage find it
// closed instead of failing while their probe runs.
func TestBreakerClosesOnItsOwnAfterCooldown(t *testing.T) {
	t.Parallel()
	s := new(readyStore)
	b := recoveringBreaker(s)
	t.Cleanup(b.stop)
	opened := time.Now()
	for range breakerThreshold {
		b.failure(false)
	}
	time.Sleep(breakerCooldown / 2)
	if st, n := b.state(), s.probes.Load(); st != "open" || n != 1 {
		t.Errorf("half a cooldown after opening: breaker %s after %d probes, want open after 1", st, n)
	}
	deadline := opened.Add(breakerCooldown + 2*time.Second)
	for b.state() != "closed" {
		if time.Now().After(deadline) {
			t.Fatalf("breaker still %s %v after opening, no request asking; %d probes", b.state(),
				time.Since(opened), s.probes.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(opened); d < breakerCooldown {
		t.Errorf("closed %v after opening, before the cooldown (%v) ended", d, breakerCooldown)
	}
	if n := s.probes.Load(); n != 2 {
		t.Errorf("%d probes, want 2 (at once, then at the cooldown's end)", n)
	}
}

// A probe that finds the store refusing connections makes the requests
// wait for a probe's verdict from then on, even within a slow failure's
// cooldown: a refusing store is asked again at no cost.
func TestBreakerRefusalMakesRequestsWait(t *testing.T) {
	t.Parallel()
	s := new(readyStore)
	s.fail(fmt.Errorf("%w: dial tcp: connection refused", limiter.ErrNotReady))
	b := recoveringBreaker(s)
	t.Cleanup(b.stop)
	for range breakerThreshold {
		b.failure(false)
	}
	for s.probes.Load() == 0 || b.state() != "open" {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the probe's verdict
	s.probe.Store(nil)                // the store is back
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if !b.await(ctx) {
		t.Fatalf("a request within the cooldown after a refusal: not let in (breaker %s)", b.state())
	}
	if st := b.state(); st != "closed" {
		t.Errorf("breaker %s after a successful probe following a refusal, want closed", st)
	}
}

// While the store keeps failing slowly, the probes it starts on its own
// come one per cooldown, not in a loop; stop ends them.
func TestBreakerOwnProbesPacedAndStopped(t *testing.T) {
	t.Parallel()
	s := new(readyStore)
	s.fail(context.DeadlineExceeded) // slow: the cooldown applies
	b := recoveringBreaker(s)
	for range breakerThreshold {
		b.failure(false)
	}
	time.Sleep(2*breakerCooldown + breakerCooldown/2)
	if n := s.probes.Load(); n < 1 || n > 3 {
		t.Errorf("%d probes in %v of a failing store, want 1 to 3 (one per cooldown)", n, 2*breakerCooldown+breakerCooldown/2)
	}
	b.stop()
	n := s.probes.Load()
	time.Sleep(breakerCooldown + breakerCooldown/2)
	if m := s.probes.Load(); m > n+1 { // one may have been starting
		t.Errorf("%d probes after stop, want none", m-n)
	}
}

// A warm-up that keeps finding no connection until its time runs out
// reports that (a fast failure: the next request probes at once), not
// the deadline (which would call for the cooldown).
func TestRecoveryWarmUpReportsItsCause(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("%w: dial tcp: connection refused", limiter.ErrNotReady)
	s := &readyStore{warm: func(ctx context.Context) error {
		<-time.After(30 * time.Millisecond)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return refused
	}}
	rec := &recovery{store: s, conns: 1, dial: 10 * time.Millisecond}
	err := rec.run(func() {})
	if !errors.Is(err, limiter.ErrNotReady) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("run() = %v, want the refusal (ErrNotReady), not the deadline", err)
	}
}

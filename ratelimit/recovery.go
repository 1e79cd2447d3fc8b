package ratelimit

import (
	"context"
	"errors"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// recovery is how a handler on Redis comes back after an outage without
// failing the crowd that arrives as the store does.
//
// A probe PINGs the store on a connection of its own, then warms the pool
// that decides: it dials min_idle_conns connections (to every master on a
// cluster) before the breaker closes, so the requests let in find
// connections ready instead of each dialling under its timeout. One probe
// runs at a time.
//
// What an open breaker does with a request depends on what the store did:
//   - It refused connections (a dial refused, by a decision or a probe):
//     the store is down and asking again costs nothing. The request waits
//     for the verdict of a probe that starts after it arrived (the
//     requests that arrive during a probe wait for the next one), so a
//     wait is a refused dial or, once the store answers, its warm-up
//     (bounded by the dial timeout plus warmRetryFor). The breaker closes
//     with the first probe that succeeds.
//   - It failed otherwise (timeouts, errors): the request gets its
//     failure mode at once for breakerCooldown. A probe starts at once in
//     the background: if it finds the store refusing connections, the
//     requests wait as above from then on; if it succeeds, the breaker
//     still closes only at the cooldown's end (a slow store is not called
//     again at once). After a failed probe the next starts on its own at
//     the cooldown's end: the breaker closes as soon as the store is
//     back, not when a request happens to ask.
type recovery struct {
	store limiter.ReadyStore
	dial  time.Duration // the client's dial timeout
	read  time.Duration // the client's read timeout
	conns int           // idle connections to warm
}

const (
	// warmRetryFor is how long the warm-up tries again after the probe
	// reached the store (a cluster's failed master is replaced, a
	// Sentinel group names the new primary).
	warmRetryFor = time.Second
	// warmRetryEvery is the pause between two warm-up attempts.
	warmRetryEvery = 20 * time.Millisecond
)

// probeRound is one probe and the requests waiting for its verdict.
type probeRound struct {
	done chan struct{} // closed with the verdict
	ok   bool          // the verdict; read after done
}

func newRound() *probeRound { return &probeRound{done: make(chan struct{})} }

// wait waits for r's verdict; false when ctx ends first.
func (r *probeRound) wait(ctx context.Context) bool {
	select {
	case <-r.done:
		return r.ok
	case <-ctx.Done():
		return false
	}
}

// finish gives r's verdict; a nil r has no one waiting.
func (r *probeRound) finish(ok bool) {
	if r != nil {
		r.ok = ok
		close(r.done)
	}
}

// await is allow for a breaker with a recovery: b is open.
func (b *breaker) await(ctx context.Context) bool {
	b.mu.Lock()
	if !b.open.Load() {
		b.mu.Unlock()
		return true
	}
	if !b.waits { // the store stalled or erred: fail at once
		if b.round == nil && !b.now().Before(b.openUntil) {
			b.startLocked()
		}
		b.mu.Unlock()
		return false
	}
	r := b.next
	switch {
	case b.round == nil:
		r = b.startLocked()
	case r == nil:
		r = newRound()
		b.next = r
	}
	b.mu.Unlock()
	return r.wait(ctx)
}

// startLocked starts a probe round; b.mu is held.
func (b *breaker) startLocked() *probeRound {
	r := newRound()
	if b.stopped {
		r.finish(false)
		return r
	}
	b.round = r
	go b.probe(r)
	return r
}

// probe runs round r and gives its verdict (see recovery).
func (b *breaker) probe(r *probeRound) {
	err := b.rec.run(b.sawRefusal)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.round = nil
	next := b.next
	b.next = nil
	switch {
	case err == nil && (b.waits || !b.now().Before(b.openUntil)):
		b.closeLocked()
		r.finish(true)
		next.finish(true)
	case err == nil: // a slow failure's cooldown stands
		r.finish(false)
		next.finish(false)
		b.probeAfterLocked(b.openUntil.Sub(b.now()))
	case refused(err):
		b.logProbe("refused: requests wait for the next probe", err)
		b.waits = true
		r.finish(false)
		if next != nil {
			b.round = next
			go b.probe(next)
		}
	default:
		b.logProbe("failed: requests get their failure mode until the cooldown's end", err)
		b.waits = false
		b.openUntil = b.now().Add(breakerCooldown)
		b.probeAfterLocked(breakerCooldown)
		r.finish(false)
		next.finish(false) // the cooldown applies to them too
	}
}

// logProbe logs a failed probe's verdict at debug level.
func (b *breaker) logProbe(verdict string, err error) {
	if b.log != nil {
		b.log.Debug("rate limit store probe "+verdict, zap.Error(err))
	}
}

// refused reports whether err is the store refusing connections at once
// (not a timeout, not an error of the store).
func refused(err error) bool {
	var ne net.Error
	return errors.Is(err, limiter.ErrNotReady) && !(errors.As(err, &ne) && ne.Timeout()) &&
		!errors.Is(err, context.DeadlineExceeded)
}

// sawRefusal is told by a probe that the store refuses connections: the
// requests from now on wait for a probe's verdict.
func (b *breaker) sawRefusal() {
	b.mu.Lock()
	if b.open.Load() {
		b.waits = true
	}
	b.mu.Unlock()
}

// run probes the store, then warms its pool, retrying the warm-up while
// it fails for up to the dial timeout plus warmRetryFor; refusedNow is
// called each time the store refuses a connection.
func (rec *recovery) run(refusedNow func()) error {
	ctx, cancel := context.WithTimeout(context.Background(), rec.dial+2*rec.read)
	err := rec.store.Probe(ctx)
	cancel()
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(context.Background(), rec.dial+warmRetryFor)
	defer cancel()
	var last error // the last failure before the time ran out: its cause
	for {
		err = rec.store.Warm(ctx, rec.conns)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		if refused(err) {
			refusedNow()
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(warmRetryEvery):
		}
	}
}

// probeAfterLocked starts a probe on its own after d (see recovery); b.mu
// is held.
func (b *breaker) probeAfterLocked(d time.Duration) {
	if b.rec == nil || b.stopped {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	b.timer = time.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.open.Load() && b.round == nil {
			b.startLocked()
		}
	})
}

// stop ends the probes started on their own: the handler is cleaned up
// and its store may be closed.
func (b *breaker) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.uncountLocked()
	if b.timer != nil {
		b.timer.Stop()
	}
}

// notReady opens the breaker without a cooldown and without counting a
// failure: a decision found no connection, so the requests after it wait
// for a probe to make the store ready.
func (b *breaker) notReady() {
	if b.open.Load() {
		return
	}
	b.mu.Lock()
	if !b.open.Load() {
		b.openLocked(b.now(), "no connection to the store: requests wait for a probe", nil)
		b.openUntil = time.Time{}
		b.probing = false
		b.waits = true
	}
	b.mu.Unlock()
}

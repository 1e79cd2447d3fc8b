package ratelimit

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// recovery is how a handler on Redis comes back after an outage without
// failing the crowd that arrives as the store does.
//
// While the breaker is open (and its cooldown, if any, is over) a request
// does not fail at once: it waits for the verdict of a probe that starts
// after it arrived. One probe runs at a time; the requests that arrive
// meanwhile wait for the next. A probe PINGs the store on a connection of
// its own (never through the pool that decides: after failed dials
// go-redis refuses to dial for up to a second), then warms the pool: it
// dials min_idle_conns connections (to every master on a cluster) before
// the breaker closes and lets the waiting requests in, so they find
// connections ready instead of each dialling under its timeout.
//
// A request waits at most probeWaitFactor × timeout for the probe to
// reach the store (so an outage adds no more than that to a request);
// once the store answered, it waits for the warm-up, which is bounded by
// the dial timeout plus warmRetryFor. A probe that failed fast with no
// connection (a refused dial: the store is down, and asking again costs
// nothing) lets the next request probe at once; a slower failure or a
// store error keeps the breaker open for breakerCooldown, with requests
// getting their failure mode at once.
type recovery struct {
	store limiter.ReadyStore
	dial  time.Duration // the client's dial timeout
	read  time.Duration // the client's read timeout
	conns int           // idle connections to warm
}

const (
	// warmRetryFor is how long the warm-up tries again after the probe
	// reached the store: go-redis tries a pool that refuses to dial once
	// a second.
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

// await is allow for a breaker with a recovery: b is open.
func (b *breaker) await(ctx context.Context) bool {
	b.mu.Lock()
	if !b.open.Load() {
		b.mu.Unlock()
		return true
	}
	if b.now().Before(b.openUntil) {
		b.mu.Unlock()
		return false
	}
	var r *probeRound
	switch {
	case !b.waits: // the store stalled or erred: fail at once, probe behind
		if b.round == nil {
			b.round = newRound()
			go b.probe(b.round)
		}
		b.mu.Unlock()
		return false
	case b.round == nil:
		r = newRound()
		b.round = r
		go b.probe(r)
	case b.next != nil:
		r = b.next
	default:
		r = newRound()
		b.next = r
	}
	b.mu.Unlock()
	return r.wait(ctx)
}

// probe runs round r and gives its verdict: success closes the breaker
// and lets the waiting requests in; a failure fails r's requests, and the
// next round starts at once unless the failure calls for the cooldown.
func (b *breaker) probe(r *probeRound) {
	err := b.rec.run()
	// Refused: the store is down and said so at once; asking again costs
	// nothing. A timeout or an error of the store calls for the cooldown.
	var ne net.Error
	fast := errors.Is(err, limiter.ErrNotReady) && !(errors.As(err, &ne) && ne.Timeout()) &&
		!errors.Is(err, context.DeadlineExceeded)
	b.mu.Lock()
	defer b.mu.Unlock()
	r.ok = err == nil
	close(r.done)
	b.round = nil
	next := b.next
	b.next = nil
	b.waits = fast
	if err == nil {
		b.closeLocked()
		if next != nil {
			next.ok = true
			close(next.done)
		}
		return
	}
	if !fast {
		b.openUntil = b.now().Add(breakerCooldown)
	}
	if next == nil {
		return
	}
	if !fast {
		close(next.done) // ok false: the cooldown applies to them too
		return
	}
	b.round = next
	go b.probe(next)
}

// run probes the store, then warms its pool, retrying the warm-up while
// it fails for up to the dial timeout plus warmRetryFor.
func (rec *recovery) run() error {
	ctx, cancel := context.WithTimeout(context.Background(), rec.dial+2*rec.read)
	err := rec.store.Probe(ctx)
	cancel()
	if err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(context.Background(), rec.dial+warmRetryFor)
	defer cancel()
	for {
		err = rec.store.Warm(ctx, rec.conns)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(warmRetryEvery):
		}
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
		b.open.Store(true)
		b.openUntil = time.Time{}
		b.probing = false
		b.waits = true
	}
	b.mu.Unlock()
}

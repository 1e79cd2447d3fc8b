package ratelimit

import (
	"context"
	"sync"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// leaseRefresher keeps the leases of requests in flight alive: every tick
// it refreshes, in one call per store, each lease a third of its TTL old
// (so a lease survives two failed refreshes). One per process
// (processRefresher), shared by every handler and config load; its
// goroutine runs only while some lease is live.
type leaseRefresher struct {
	tick time.Duration

	mu      sync.Mutex
	live    map[*heldLease]struct{}
	running bool
	stopped bool // tests: a "killed" instance refreshes nothing more
}

// leaseRefreshTick is how often the refresher looks for leases due: a
// tenth of the shortest lease_ttl (1s).
const leaseRefreshTick = 100 * time.Millisecond

// leaseRefreshTimeout bounds one store's refresh call.
const leaseRefreshTimeout = time.Second

// processRefresher refreshes the leases of every handler in this process.
var processRefresher = newLeaseRefresher(leaseRefreshTick)

func newLeaseRefresher(tick time.Duration) *leaseRefresher {
	return &leaseRefresher{tick: tick, live: map[*heldLease]struct{}{}}
}

// add registers leases just taken; the first is due a third of its TTL
// from now.
func (r *leaseRefresher) add(ls []*heldLease) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, hl := range ls {
		hl.due = now.Add(hl.lease.TTL / 3)
		r.live[hl] = struct{}{}
	}
	if !r.running && !r.stopped {
		r.running = true
		go r.run()
	}
}

// remove forgets leases given back.
func (r *leaseRefresher) remove(ls []*heldLease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, hl := range ls {
		delete(r.live, hl)
	}
}

// stop ends the refreshes for good (tests).
func (r *leaseRefresher) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// run refreshes due leases every tick until none is live.
func (r *leaseRefresher) run() {
	t := time.NewTicker(r.tick)
	defer t.Stop()
	for range t.C {
		due, ok := r.due(time.Now())
		if !ok {
			return
		}
		for store, ls := range due {
			r.refresh(store, ls)
		}
	}
}

// due is the leases due at now, by store; false when the refresher must
// stop (no lease live, or stopped).
func (r *leaseRefresher) due(now time.Time) (map[limiter.Leaser][]*heldLease, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.live) == 0 || r.stopped {
		r.running = false
		return nil, false
	}
	var due map[limiter.Leaser][]*heldLease
	for hl := range r.live {
		if hl.body.expired(now) { // a slow body: the lease expires within its TTL
			delete(r.live, hl)
			continue
		}
		if now.Before(hl.due) {
			continue
		}
		if due == nil {
			due = map[limiter.Leaser][]*heldLease{}
		}
		due[hl.store] = append(due[hl.store], hl)
	}
	return due, true
}

// refresh refreshes one store's due leases in one call. A lease the store
// no longer holds (expired while refreshes failed) is not refreshed again;
// after a failed call the leases are tried again at the next tick.
func (r *leaseRefresher) refresh(store limiter.Leaser, ls []*heldLease) {
	leases := make([]limiter.Lease, len(ls))
	for i, hl := range ls {
		leases[i] = hl.lease
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaseRefreshTimeout)
	alive, err := store.Refresh(ctx, leases)
	cancel()
	if err != nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, hl := range ls {
		if !alive[i] {
			delete(r.live, hl)
			continue
		}
		hl.due = now.Add(hl.lease.TTL / 3)
	}
}

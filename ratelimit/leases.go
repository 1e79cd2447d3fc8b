package ratelimit

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Concurrency zones: the leases of requests in flight. A lease is taken by
// the request's decision (all or nothing with its other zones), given back
// when the handler returns, whatever the ending (response written, client
// gone, error, panic: a deferred call), and refreshed meanwhile by one
// refresher per process that batches every live lease of a store in one
// call. A handler cleaned up by a config reload keeps its Redis client
// until its last lease is given back, so its requests in flight keep
// their slots (see leaseHolds).

// leaseReleaseTimeout bounds giving a request's leases back: detached
// from the request, whose client may be gone. A lease not given back
// expires after its zone's lease_ttl.
const leaseReleaseTimeout = time.Second

// heldLease is one lease a request holds.
type heldLease struct {
	store limiter.Leaser // where it was taken: the store or the local fallback
	lease limiter.Lease
	due   time.Time  // its next refresh (guarded by the refresher's mutex)
	body  *bodyWatch // its request's body deadline (nil: no body): not refreshed past it
}

// requestLeases is what one request holds, given back when it ends.
type requestLeases struct {
	leases []*heldLease
	buf    [2]*heldLease
}

// takeLeases is the leases ds took: the allowed concurrency zones of cost 1
// whose store call charged (no enforcing zone of the same call refused).
// They are registered with the refresher, r's body under their zones'
// body_timeout (see bodytimeout.go); nil when none.
func (h *Handler) takeLeases(r *http.Request, ds []zoneDecision) *requestLeases {
	storeRefused, localRefused := false, false
	for i := range ds {
		d := &ds[i]
		if !d.res.Allowed && !d.zone.DryRun && !d.cached {
			storeRefused = storeRefused || d.state == stateStore
			localRefused = localRefused || d.state == stateLocal
		}
	}
	var rl *requestLeases
	var bodyTimeout time.Duration
	for i := range ds {
		d := &ds[i]
		if d.ask.Lease == "" || !d.res.Allowed {
			continue
		}
		var store limiter.Leaser
		switch {
		case d.state == stateStore && !storeRefused:
			store, _ = h.store.(limiter.Leaser)
		case d.state == stateLocal && !localRefused:
			store = h.local
		}
		if store == nil {
			continue
		}
		if rl == nil {
			rl = new(requestLeases)
			rl.leases = rl.buf[:0]
		}
		rl.leases = append(rl.leases, &heldLease{store: store, lease: limiter.Lease{
			Key: d.ask.Key, ID: d.ask.Lease, TTL: d.ask.Limit.Window,
		}})
		if bt := d.zone.bodyTimeout(); bodyTimeout == 0 || bt < bodyTimeout {
			bodyTimeout = bt
		}
	}
	if rl != nil {
		if w := watchBody(r, bodyTimeout); w != nil {
			for _, hl := range rl.leases {
				hl.body = w
			}
		}
		h.holds.hold()
		h.refresher.add(rl.leases)
	}
	return rl
}

// giveBack releases a request's leases: it runs when the handler returns.
func (h *Handler) giveBack(rl *requestLeases) {
	defer h.holds.done()
	h.refresher.remove(rl.leases)
	ctx, cancel := context.WithTimeout(context.Background(), leaseReleaseTimeout)
	defer cancel()
	for i, hl := range rl.leases {
		if hl == nil {
			continue
		}
		batch := []limiter.Lease{hl.lease}
		for j := i + 1; j < len(rl.leases); j++ { // the same store: one call
			if o := rl.leases[j]; o != nil && o.store == hl.store {
				batch, rl.leases[j] = append(batch, o.lease), nil
			}
		}
		if err := hl.store.Release(ctx, batch); err != nil {
			h.logger.Warn("rate limit lease not given back; it frees its slot after lease_ttl", zap.Error(err))
		}
	}
}

// leaseHolds counts a handler's requests that hold leases, so that
// Cleanup keeps the handler's Redis client until the last has given its
// leases back.
type leaseHolds struct {
	mu      sync.Mutex
	n       int
	closed  bool
	release func() error // run once closed and n is 0
	logger  *zap.Logger  // logs release's error then
}

func (c *leaseHolds) hold() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *leaseHolds) done() {
	c.mu.Lock()
	c.n--
	var f func() error
	if c.n == 0 && c.closed {
		f, c.release = c.release, nil
	}
	c.mu.Unlock()
	if f == nil {
		return
	}
	if err := f(); err != nil {
		c.logger.Warn("releasing the rate limit store", zap.Error(err))
	}
}

// close runs release now when no request holds a lease and returns its
// error; else release runs when the last gives its leases back, its
// error logged.
func (c *leaseHolds) close(release func() error, logger *zap.Logger) error {
	if c == nil { // not provisioned
		return release()
	}
	c.mu.Lock()
	c.closed = true
	if c.n > 0 {
		c.release, c.logger = release, logger
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	return release()
}

package limiter

import (
	"context"
	"sync"
	"time"
)

// releaseBatchTimeout bounds one batch of give-backs: detached from the
// callers, each of whom waits no longer than its own context.
const releaseBatchTimeout = time.Second

// releaser batches the give-backs of concurrent requests, as the
// coalescer batches their decisions: a call that finds no batch in flight
// leaves at once, alone; calls that arrive while one is in flight queue
// up and leave together when it returns, one script call per slot. Each
// caller waits for its own batch, so a request's lease is given back
// before its handler returns.
type releaser struct {
	send func(ctx context.Context, leases []Lease) error

	mu       sync.Mutex
	queue    []*releaseCall
	inFlight bool
}

// releaseCall is one caller's give-back.
type releaseCall struct {
	leases []Lease
	err    error
	done   chan struct{} // closed once err is set
}

// release gives leases back in the next batch and waits for it (or for
// ctx: the batch may still run).
func (r *releaser) release(ctx context.Context, leases []Lease) error {
	call := &releaseCall{leases: leases, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, call)
	lead := !r.inFlight
	r.inFlight = true
	r.mu.Unlock()
	if lead {
		go r.drain()
	}
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain sends the queued calls, batch after batch, until none is left.
func (r *releaser) drain() {
	for {
		r.mu.Lock()
		batch := r.queue
		r.queue = nil
		if len(batch) == 0 {
			r.inFlight = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		var leases []Lease
		for _, c := range batch {
			leases = append(leases, c.leases...)
		}
		ctx, cancel := context.WithTimeout(context.Background(), releaseBatchTimeout)
		err := r.send(ctx, leases)
		cancel()
		for _, c := range batch {
			c.err = err
			close(c.done)
		}
	}
}

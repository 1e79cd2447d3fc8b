package limiter

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coalescing limits: a batch holds at most coalesceMaxBatch calls, and at
// most coalesceMaxInFlight batches are on the wire at once. One batch in
// flight measured better than 2, 4 or 8: the calls that arrive while it
// runs all leave together in the next, so batches stay deep.
const (
	coalesceMaxBatch    = 128
	coalesceMaxInFlight = 1
)

// coalescer batches the decisions of concurrent requests. A call that
// finds no batch in flight leaves at once, alone: an idle store sees no
// added wait. Calls that arrive while a batch is in flight queue up and
// leave together as soon as it returns, as ONE script call deciding them
// in order (one per Redis Cluster slot, pipelined, when their keys lie in
// several). Under load N decisions then cost the network one round trip
// instead of N, and Redis one script run, one read and one write per key
// instead of N, with no timer in the way.
//
// Each call keeps its own deadline: a caller whose context ends stops
// waiting (its command may still run, as with a plain call that timed out
// after it was written); the batch runs until the latest deadline of its
// calls.
type coalescer struct {
	c redis.UniversalClient

	mu       sync.Mutex
	queue    []*scriptCall
	inFlight int
}

// scriptCall is one request in a batch. Calls are pooled; one whose
// caller stopped waiting is left to the garbage collector.
type scriptCall struct {
	ctx      context.Context
	deadline time.Time   // zero: ctx's alone
	timer    *time.Timer // fires at deadline while the caller waits
	keys     []string    // the request's keys
	args     []any       // the request's part of ARGV (see scriptArgs)
	now      int64       // Redis TIME (µs) of the decision
	vals     []any       // the request's part of the reply: 5 values per ask
	err      error
	done     chan struct{} // receives once now, vals and err are set

	// The keys and args of a request of up to 4 asks, pooled with the call.
	keyBuf [4]string
	argBuf [1 + 5*4]any
}

var callPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &scriptCall{done: make(chan struct{}, 1), timer: t}
}}

func newCoalescer(c redis.UniversalClient) *coalescer {
	return &coalescer{c: c}
}

// run decides one request (keys and args: its part of the script's KEYS
// and ARGV) in the next batch.
func (co *coalescer) run(ctx context.Context, keys []string, args []any) (int64, []any, error) {
	return co.runBy(ctx, time.Time{}, keys, args)
}

// runBy is run bounded by deadline (unless zero) as well as ctx.
func (co *coalescer) runBy(ctx context.Context, deadline time.Time, keys []string, args []any) (int64, []any, error) {
	call := callPool.Get().(*scriptCall)
	call.keys, call.args = keys, args
	return co.wait(ctx, deadline, call)
}

// decideAsks is runBy for asks (with their params), whose script
// arguments are written into buffers pooled with the call.
func (co *coalescer) decideAsks(ctx context.Context, deadline time.Time, asks []Ask, ps []params) (int64, []any, error) {
	call := callPool.Get().(*scriptCall)
	call.keys, call.args = appendScriptArgs(call.keyBuf[:0], call.argBuf[:0], asks, ps)
	return co.wait(ctx, deadline, call)
}

// wait queues call (its keys and args set), sends the batch if none is in
// flight, and waits for its answer, ctx or deadline.
func (co *coalescer) wait(ctx context.Context, deadline time.Time, call *scriptCall) (int64, []any, error) {
	call.ctx, call.deadline = ctx, deadline
	var expired <-chan time.Time
	if !deadline.IsZero() {
		call.timer.Reset(time.Until(deadline))
		expired = call.timer.C
	}
	co.mu.Lock()
	co.queue = append(co.queue, call)
	var batch []*scriptCall
	if co.inFlight < coalesceMaxInFlight {
		co.inFlight++
		batch = co.take()
	}
	co.mu.Unlock()
	if batch != nil {
		co.flush(batch) // this call is in it: done has its value on return
	}
	select {
	case <-call.done:
		call.timer.Stop()
		now, vals, err := call.now, call.vals, call.err
		*call = scriptCall{done: call.done, timer: call.timer}
		callPool.Put(call)
		return now, vals, err
	case <-ctx.Done():
		call.timer.Stop()
		return 0, nil, ctx.Err()
	case <-expired:
		return 0, nil, context.DeadlineExceeded
	}
}

// take removes the next batch from the queue; co.mu is held.
func (co *coalescer) take() []*scriptCall {
	n := min(len(co.queue), coalesceMaxBatch)
	if n == 0 {
		return nil
	}
	batch := make([]*scriptCall, n)
	copy(batch, co.queue)
	rest := copy(co.queue, co.queue[n:])
	clear(co.queue[rest:])
	co.queue = co.queue[:rest]
	return batch
}

// flush runs batch, then hands the calls queued meanwhile to a new
// goroutine, so that the caller that flushed returns at once.
func (co *coalescer) flush(batch []*scriptCall) {
	co.exec(batch)
	co.mu.Lock()
	next := co.take()
	if next == nil {
		co.inFlight--
	}
	co.mu.Unlock()
	if next != nil {
		go co.flush(next)
	}
}

// exec runs one batch: one script call per Redis Cluster slot (a single
// call off a cluster), EVALSHA with EVAL on NOSCRIPT, several calls as one
// pipeline.
func (co *coalescer) exec(batch []*scriptCall) {
	// A call whose caller stopped waiting (it queued behind a slow batch)
	// is not sent: its request was already answered by on_error, and must
	// not take quota now.
	live := batch[:0]
	now := time.Now()
	for _, c := range batch {
		err := c.ctx.Err()
		if err == nil && !c.deadline.IsZero() && !now.Before(c.deadline) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			c.err = err
			c.done <- struct{}{}
			continue
		}
		live = append(live, c)
	}
	batch = live
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	groups := co.slotGroups(batch)
	if len(groups) == 1 {
		keys, args := joinCalls(groups[0])
		v, err := decideScript.Run(ctx, co.c, keys, args...).Result()
		deliver(groups[0], v, err)
		return
	}
	cmds := make([]*redis.Cmd, len(groups))
	pipe := co.c.Pipeline()
	for i, g := range groups {
		keys, args := joinCalls(g)
		cmds[i] = pipe.EvalSha(ctx, decideScript.Hash(), keys, args...)
	}
	_, _ = pipe.Exec(ctx) // each command holds its own error
	var missing []int
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		pipe := co.c.Pipeline()
		for _, i := range missing {
			keys, args := joinCalls(groups[i])
			cmds[i] = pipe.Eval(ctx, decideLua, keys, args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, g := range groups {
		v, err := cmds[i].Result()
		deliver(g, v, err)
	}
}

// slotGroups splits a batch by Redis Cluster slot (all keys of one call
// share a slot); off a cluster the batch is one group.
func (co *coalescer) slotGroups(batch []*scriptCall) [][]*scriptCall {
	if _, ok := co.c.(*redis.ClusterClient); !ok || len(batch) == 1 {
		return [][]*scriptCall{batch}
	}
	var groups [][]*scriptCall
	var slots []int
	for _, c := range batch {
		slot := KeySlot(c.keys[0])
		g := 0
		for g < len(slots) && slots[g] != slot {
			g++
		}
		if g == len(slots) {
			slots = append(slots, slot)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], c)
	}
	return groups
}

// joinCalls builds the KEYS and ARGV of one script call deciding calls in
// order.
func joinCalls(calls []*scriptCall) ([]string, []any) {
	if len(calls) == 1 {
		return calls[0].keys, callArgs("d", "0", calls[0].args)
	}
	nk := 0
	parts := make([][]any, len(calls))
	for i, c := range calls {
		nk += len(c.keys)
		parts[i] = c.args
	}
	keys := make([]string, 0, nk)
	for _, c := range calls {
		keys = append(keys, c.keys...)
	}
	return keys, callArgs("d", "0", parts...)
}

// deliver hands each call its part of the reply v of the script call that
// decided calls (or its error).
func deliver(calls []*scriptCall, v any, err error) {
	n := 0
	for _, c := range calls {
		n += len(c.keys)
	}
	var now int64
	var vals []any
	if err == nil {
		now, vals, err = splitReply(v, n)
	}
	for _, c := range calls {
		if err != nil {
			c.err = err
		} else {
			c.now, c.vals = now, vals[:5*len(c.keys):5*len(c.keys)]
			vals = vals[5*len(c.keys):]
		}
		c.done <- struct{}{}
	}
}

// isNoScript reports whether err is Redis' NOSCRIPT (the script is not
// cached on that server).
func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// batchContext is the context of one batch: the values of its first call,
// no cancellation, and the latest deadline of its calls (none if a call
// has none).
func batchContext(batch []*scriptCall) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := c.deadline, !c.deadline.IsZero()
		if !ok {
			d, ok = c.ctx.Deadline()
		}
		if !ok {
			return base, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(base, latest)
}

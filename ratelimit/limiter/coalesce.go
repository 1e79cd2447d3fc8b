package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coalescing limits: a batch holds at most coalesceMaxBatch calls, and at
// most coalesceMaxInFlight batches are on the wire at once. One batch in
// flight measured better than 2, 4 or 8: the calls that arrive while it
// runs all leave together in the next, so batches stay deep.
//
// The local queue is bounded: a call that finds coalesceMaxQueue calls
// waiting, or a call with a timeout that waited coalesceMaxWait + timeout
// without being sent (the batch ahead of it takes at most its timeout),
// gets ErrOverloaded: nothing was sent, nothing charged. Both bounds
// measure this process, not the store.
const (
	coalesceMaxBatch    = 128
	coalesceMaxInFlight = 1
	coalesceMaxQueue    = 1024
	coalesceMaxWait     = time.Second
	// coalesceGrace: a batch's reply is read until coalesceGrace × the
	// timeout after its send. Under a flood this process may read a reply
	// that arrived in time only later (its goroutines wait for a core), and
	// Redis runs the batches of several instances one after another: a
	// decision that came back is used, not failed open.
	coalesceGrace = 2
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
// calls. A call with a timeout (see decideAsks) is charged for the round
// trip of the batch that carries it, not for the time it queued behind
// another: its deadline is stamped when its batch is written.
type coalescer struct {
	c     redis.UniversalClient
	calls *scriptRunner // runs each batch

	mu       sync.Mutex
	queue    []*scriptCall
	inFlight int
}

// Call states (scriptCall.sent): queued, abandoned by its caller before
// it was sent, or sent (the Unix nanoseconds of the send).
const (
	callQueued    = 0
	callAbandoned = -1
)

// scriptCall is one request in a batch. Calls are pooled; one whose
// caller stopped waiting is left to the garbage collector.
type scriptCall struct {
	ctx     context.Context
	timeout time.Duration // from the send; zero: ctx's deadline alone
	queued  time.Time     // when the call joined the queue
	sent    atomic.Int64  // callQueued, callAbandoned or the send time
	timer   *time.Timer   // the caller's backstop while it waits
	keys    []string      // the request's keys (with ban keys: see scriptArgs)
	args    []any         // the request's part of ARGV (see scriptArgs)
	now     int64         // Redis TIME (µs) of the decision
	vals    []any         // the request's part of the reply: 5 values per ask
	err     error
	done    chan struct{} // receives once now, vals and err are set

	// The keys and args of a request of up to 4 asks, pooled with the call.
	keyBuf [4]string
	argBuf [1 + 5*4]any
}

var callPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &scriptCall{done: make(chan struct{}, 1), timer: t}
}}

// reset clears call for the pool, keeping its channel and timer.
func (call *scriptCall) reset() {
	done, timer := call.done, call.timer
	call.ctx, call.timeout, call.queued = nil, 0, time.Time{}
	call.sent.Store(callQueued)
	call.keys, call.args, call.vals, call.err, call.now = nil, nil, nil, nil, 0
	call.keyBuf, call.argBuf = [4]string{}, [1 + 5*4]any{}
	call.done, call.timer = done, timer
}

func newCoalescer(c redis.UniversalClient) *coalescer {
	return &coalescer{c: c, calls: &scriptRunner{c: c}}
}

// run decides one request (keys and args: its part of the script's KEYS
// and ARGV) in the next batch, bounded by ctx and by timeout from the
// send of its batch (unless zero).
func (co *coalescer) run(ctx context.Context, timeout time.Duration, keys []string, args []any) (int64, []any, error) {
	call := callPool.Get().(*scriptCall)
	call.keys, call.args = keys, args
	return co.wait(ctx, timeout, call)
}

// decideAsks is run for asks (with their params), whose script arguments
// are written into buffers pooled with the call, bounded by timeout from
// the moment its batch is written (unless zero) as well as ctx.
func (co *coalescer) decideAsks(ctx context.Context, timeout time.Duration, asks []Ask, ps []params) (int64, []any, error) {
	call := callPool.Get().(*scriptCall)
	call.keys, call.args = appendScriptArgs(call.keyBuf[:0], call.argBuf[:0], asks, ps)
	return co.wait(ctx, timeout, call)
}

// wait queues call (its keys and args set), sends the batch if none is in
// flight, and waits for its answer, ctx or its backstop: a call with a
// timeout that was not sent within coalesceMaxWait + 2×timeout gives up
// with ErrOverloaded (exec sends none older than coalesceMaxWait +
// timeout), one that was sent gives up (coalesceGrace+1)×timeout after
// its send (the batch itself ends at coalesceGrace×timeout after the
// send; the backstop holds should the client not).
func (co *coalescer) wait(ctx context.Context, timeout time.Duration, call *scriptCall) (int64, []any, error) {
	call.ctx, call.timeout, call.queued = ctx, timeout, time.Now()
	co.mu.Lock()
	if len(co.queue) >= coalesceMaxQueue {
		co.mu.Unlock()
		call.reset()
		callPool.Put(call)
		return 0, nil, ErrOverloaded
	}
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
	var expired <-chan time.Time
	if timeout > 0 {
		call.timer.Reset(coalesceMaxWait + 2*timeout)
		expired = call.timer.C
	}
	for {
		select {
		case <-call.done:
			call.timer.Stop()
			now, vals, err := call.now, call.vals, call.err
			call.reset()
			callPool.Put(call)
			return now, vals, err
		case <-ctx.Done():
			call.timer.Stop()
			return 0, nil, ctx.Err()
		case <-expired:
			if call.sent.CompareAndSwap(callQueued, callAbandoned) {
				return 0, nil, ErrOverloaded // never sent: nothing charged
			}
			left := time.Until(time.Unix(0, call.sent.Load()).Add((coalesceGrace + 1) * timeout))
			if left <= 0 {
				return 0, nil, context.DeadlineExceeded
			}
			call.timer.Reset(left)
		}
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

// exec runs one batch: one call of decide.lua per Redis Cluster slot (a
// single call off a cluster; see scriptRunner), several calls as one
// pipeline.
func (co *coalescer) exec(batch []*scriptCall) {
	// A call whose caller stopped waiting (it queued behind a slow batch)
	// is not sent: its request was already answered, and must not take
	// quota now. A call that queued longer than coalesceMaxWait + its
	// timeout is not sent either: the process is overloaded.
	live := batch[:0]
	now := time.Now()
	for _, c := range batch {
		err := c.ctx.Err()
		if err == nil && c.timeout > 0 && now.Sub(c.queued) > coalesceMaxWait+c.timeout {
			err = ErrOverloaded
		}
		if err == nil && !c.sent.CompareAndSwap(callQueued, now.UnixNano()) {
			err = ErrOverloaded // abandoned at its backstop
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
	ctx, cancel := batchContext(batch, now)
	defer cancel()
	groups := co.slotGroups(batch)
	if len(groups) == 1 {
		keys, args := joinCalls(groups[0])
		v, err := co.calls.run(ctx, keys, args)
		deliver(groups[0], v, err)
		return
	}
	keys, args := make([][]string, len(groups)), make([][]any, len(groups))
	for i, g := range groups {
		keys[i], args[i] = joinCalls(g)
	}
	cmds := co.calls.runEach(ctx, keys, args)
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
	return groupBySlot(batch, func(c *scriptCall) string { return c.keys[0] })
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

// asks is the number of asks of the call's request: the first value of
// its part of ARGV (see scriptArgs). Its keys may be more (ban keys).
func (call *scriptCall) asks() int {
	n, _ := call.args[0].(int)
	return n
}

// deliver hands each call its part of the reply v of the script call that
// decided calls (or its error).
func deliver(calls []*scriptCall, v any, err error) {
	n := 0
	for _, c := range calls {
		n += c.asks()
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
			na := 5 * c.asks()
			c.now, c.vals = now, vals[:na:na]
			vals = vals[na:]
		}
		c.done <- struct{}{}
	}
}

// batchContext is the context of one batch written at now: the values of
// its first call, no cancellation, and the latest deadline of its calls
// (now + coalesceGrace×timeout, else the context's; none if a call has
// none).
func batchContext(batch []*scriptCall, now time.Time) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := now.Add(coalesceGrace*c.timeout), c.timeout > 0
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

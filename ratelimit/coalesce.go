package ratelimit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coalescing limits: a batch holds at most coalesceMaxBatch calls, and at
// most coalesceMaxInFlight batches are on the wire at once. One batch in
// flight measured best (README, "Performance and benchmarks"): the calls that arrive while
// it runs all leave together in the next, so batches stay deep.
const (
	coalesceMaxBatch    = 128
	coalesceMaxInFlight = 1
)

// coalescer batches the decide script calls of concurrent requests into
// pipelines. A call that finds no batch in flight leaves at once, alone:
// an idle store sees no added wait. Calls that arrive while a batch is in
// flight queue up and leave together, as one pipeline (one write, one
// read), as soon as it returns. Under load N decisions then cost Redis
// and the network one round trip instead of N, with no timer in the way.
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

// scriptCall is one request's script call in a batch. Calls are pooled;
// one whose caller stopped waiting is left to the garbage collector.
type scriptCall struct {
	ctx  context.Context
	keys []string
	args []any
	val  any
	err  error
	done chan struct{} // receives once val and err are set
}

var callPool = sync.Pool{New: func() any { return &scriptCall{done: make(chan struct{}, 1)} }}

func newCoalescer(c redis.UniversalClient) *coalescer {
	return &coalescer{c: c}
}

// run runs the decide script with keys and args, in the next batch.
func (co *coalescer) run(ctx context.Context, keys []string, args []any) (any, error) {
	call := callPool.Get().(*scriptCall)
	call.ctx, call.keys, call.args = ctx, keys, args
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
		val, err := call.val, call.err
		*call = scriptCall{done: call.done}
		callPool.Put(call)
		return val, err
	case <-ctx.Done():
		return nil, ctx.Err()
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

// exec runs one batch: one call alone as EVALSHA (EVAL on NOSCRIPT), more
// as one pipeline of EVALSHA, and the NOSCRIPT ones again as EVAL.
func (co *coalescer) exec(batch []*scriptCall) {
	// A call whose caller stopped waiting (it queued behind a slow batch)
	// is not sent: its request was already answered by on_error, and must
	// not take quota now.
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
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
	if len(batch) == 1 {
		c := batch[0]
		c.val, c.err = decideScript.Run(ctx, co.c, c.keys, c.args...).Result()
		c.done <- struct{}{}
		return
	}
	cmds := make([]*redis.Cmd, len(batch))
	pipe := co.c.Pipeline()
	for i, c := range batch {
		cmds[i] = pipe.EvalSha(ctx, decideScript.Hash(), c.keys, c.args...)
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
			cmds[i] = pipe.Eval(ctx, decideLua, batch[i].keys, batch[i].args...)
		}
		_, _ = pipe.Exec(ctx)
	}
	for i, c := range batch {
		c.val, c.err = cmds[i].Result()
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
		d, ok := c.ctx.Deadline()
		if !ok {
			return base, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(base, latest)
}

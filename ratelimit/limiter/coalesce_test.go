package limiter

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// queued waits until the coalescer holds n waiting calls.
func queued(t *testing.T, co *coalescer, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		co.mu.Lock()
		l := len(co.queue)
		co.mu.Unlock()
		if l >= n {
			return
		}
	}
	t.Errorf("the coalescer never held %d calls", n)
}

// decideConcurrently runs n single-ask decisions on s at once and counts
// the allowed ones.
func decideConcurrently(t *testing.T, s Store, ask Ask, n int) int {
	t.Helper()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := s.Decide(ctx, []Ask{ask})
			if err != nil {
				t.Errorf("Decide: %v", err)
				return
			}
			if res[0].Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(allowed.Load())
}

// While one call is on the wire, the others queue and leave in batches of
// at most coalesceMaxBatch, each one script call; every decision stays
// exact.
func TestCoalescerBatchesConcurrentCalls(t *testing.T) {
	c, prefix := testenv.Redis(t)
	const n = 300
	if err := decideScript.Load(context.Background(), c).Err(); err != nil {
		t.Fatal(err)
	}
	s := NewRedisStore(c)
	hook := &testenv.RoundTrips{}
	hook.Before = func() { queued(t, s.co, n-1) } // the first call waits for all others
	c.AddHook(hook)
	limit := Limit{Algorithm: TokenBucket, Events: 100, Window: time.Hour}
	ask := Ask{Key: StoreKey(prefix, "co", "", "k"), Limit: limit, Cost: 1}

	if got := decideConcurrently(t, s, ask, n); got != 100 {
		t.Errorf("%d of %d concurrent asks allowed, want exactly 100", got, n)
	}
	// 1 alone, then 299 in batches of at most 128: 128 + 128 + 43.
	if got := hook.N.Load(); got != 4 {
		t.Errorf("%d round trips for %d calls, want 4", got, n)
	}
}

// A server that lost its script cache (restart, SCRIPT FLUSH) answers a
// batch's EVALSHA with NOSCRIPT: it is sent again as EVAL.
func TestCoalescerNoScriptInBatch(t *testing.T) {
	srv := testenv.StartRedis(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })
	s := NewRedisStore(c)
	const n = 50
	first := &testenv.RoundTrips{}
	first.Before = func() { queued(t, s.co, n-1) }
	c.AddHook(first)
	// The script is cached by the first call; drop it before the batch.
	c.AddHook(&beforeNth{n: 2, f: func() {
		if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
			t.Errorf("SCRIPT FLUSH: %v", err)
		}
	}})
	limit := Limit{Algorithm: FixedWindow, Events: 20, Window: time.Hour}
	ask := Ask{Key: "co:noscript", Limit: limit, Cost: 1}

	if got := decideConcurrently(t, s, ask, n); got != 20 {
		t.Errorf("%d of %d asks allowed, want exactly 20", got, n)
	}
	if got := first.N.Load(); got != 3 {
		t.Errorf("%d script commands, want 3 (one alone, the batch's EVALSHA refused, its EVAL)", got)
	}
}

// beforeNth is a go-redis hook running f before the nth script command.
type beforeNth struct {
	n    int64
	seen atomic.Int64
	f    func()
}

func (h *beforeNth) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeNth) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if testenv.IsScriptCmd(cmd) {
			if h.seen.Add(1) == h.n {
				h.f()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *beforeNth) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A caller stops waiting at its own deadline, even when its batch never
// returns.
func TestCoalescerDeadline(t *testing.T) {
	stall := testenv.StartStall(t)
	c := redis.NewClient(&redis.Options{Addr: stall.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { c.Close() })
	s := NewRedisStore(c)
	limit := Limit{Algorithm: TokenBucket, Events: 10, Window: time.Minute}
	const timeout = 100 * time.Millisecond
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, err := s.Decide(ctx, []Ask{{Key: "co:stall", Limit: limit, Cost: 1}})
			if err == nil {
				t.Errorf("call %d: no error from a server that never answers", i)
			}
			if d := time.Since(start); d > 10*timeout {
				t.Errorf("call %d returned after %v, want about %v", i, d, timeout)
			}
		})
	}
	wg.Wait()
}

// A call whose caller gave up while it queued behind a slow batch is never
// sent: its request was answered by on_error and must take no quota.
func TestCoalescerDropsAbandonedCalls(t *testing.T) {
	c, prefix := testenv.Redis(t)
	s := NewRedisStore(c)
	gave := make(chan struct{})
	hook := &testenv.RoundTrips{}
	hook.Before = func() { <-gave } // the first batch returns only after B gave up
	c.AddHook(hook)
	limit := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	keyA, keyB := StoreKey(prefix, "co", "", "a"), StoreKey(prefix, "co", "", "b")

	leader := make(chan error, 1)
	go func() {
		_, err := s.Decide(context.Background(), []Ask{{Key: keyA, Limit: limit, Cost: 1}})
		leader <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.co.mu.Lock()
		busy := s.co.inFlight == 1
		s.co.mu.Unlock()
		if busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first call never went out")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	_, err := s.Decide(ctx, []Ask{{Key: keyB, Limit: limit, Cost: 1}})
	cancel()
	if err == nil {
		t.Fatal("B: no error though its deadline passed while it queued")
	}
	close(gave)
	if err := <-leader; err != nil {
		t.Fatalf("A: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.co.mu.Lock()
		idle := s.co.inFlight == 0
		s.co.mu.Unlock()
		if idle {
			break
		}
	}
	if n, err := c.Exists(context.Background(), keyA).Result(); err != nil || n != 1 {
		t.Errorf("A's key: EXISTS = %d, %v; want 1", n, err)
	}
	if n, err := c.Exists(context.Background(), keyB).Result(); err != nil || n != 0 {
		t.Errorf("B's key: EXISTS = %d, %v; want 0 (B was abandoned, never sent)", n, err)
	}
}

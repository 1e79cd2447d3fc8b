package limiter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// timedRedis is a client like the module's (context deadlines bound the
// socket) on the test Redis, and a key prefix.
func timedRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	opts, err := redis.ParseURL(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true
	c := redis.NewClient(opts)
	// The script cached first, so that a test's hooks see its decisions'
	// commands alone, never a NOSCRIPT retry (a new script on this Redis).
	if err := decideScript.Load(context.Background(), c).Err(); err != nil {
		t.Fatal(err)
	}
	prefix := "edgekit-test-" + testenv.RandomID(6)
	t.Cleanup(func() {
		testenv.DeletePrefix(c, prefix)
		c.Close()
	})
	return c, prefix
}

// inFlight waits until a batch of s is on the wire.
func inFlight(t *testing.T, s *RedisStore) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.co.mu.Lock()
		busy := s.co.inFlight == 1
		s.co.mu.Unlock()
		if busy {
			return
		}
	}
	t.Fatal("no batch ever went out")
}

// A call queued behind a slow batch is charged for its own batch's round
// trip only: each batch answers within the timeout after its send, so no
// call fails, although the second waited longer than the timeout in all.
func TestCoalescerTimeoutFromSend(t *testing.T) {
	c, prefix := timedRedis(t)
	s := NewRedisStore(c)
	const timeout = 200 * time.Millisecond
	c.AddHook(&beforeNth{n: 1, f: func() { time.Sleep(150 * time.Millisecond) }})
	c.AddHook(&beforeNth{n: 2, f: func() { time.Sleep(120 * time.Millisecond) }})
	limit := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	ask := func(k string) []Ask { return []Ask{{Key: StoreKey(prefix, "co", "", k), Limit: limit, Cost: 1}} }

	first := make(chan error, 1)
	go func() {
		_, err := s.DecideWithin(context.Background(), timeout, ask("a"))
		first <- err
	}()
	inFlight(t, s)
	start := time.Now()
	res, err := s.DecideWithin(context.Background(), timeout, ask("b"))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("queued call: %v after %v; want a decision (its own round trip took ~120ms of %v)", err, took, timeout)
	}
	if !res[0].Allowed {
		t.Errorf("queued call refused, want allowed")
	}
	if took < timeout {
		t.Logf("queued call took %v, under the timeout: the scenario did not queue it long", took)
	}
	if err := <-first; err != nil {
		t.Errorf("first call: %v", err)
	}
}

// The local queue is bounded: past coalesceMaxQueue waiting calls a call
// fails at once with ErrOverloaded, and a call with a timeout that cannot
// be sent within its wait bound gives up with ErrOverloaded, never sent.
func TestCoalescerOverloaded(t *testing.T) {
	c, prefix := timedRedis(t)
	s := NewRedisStore(c)
	release := make(chan struct{})
	c.AddHook(&beforeNth{n: 1, f: func() { <-release }})
	limit := Limit{Algorithm: FixedWindow, Events: 10000, Window: time.Hour}
	key := func(k string) string { return StoreKey(prefix, "co", "", k) }

	var wg sync.WaitGroup
	wg.Go(func() { // the first batch, held until release
		if _, err := s.Decide(context.Background(), []Ask{{Key: key("held"), Limit: limit, Cost: 1}}); err != nil {
			t.Errorf("held call: %v", err)
		}
	})
	inFlight(t, s)

	// A call with a timeout waits at most coalesceMaxWait + 2×timeout
	// unsent, then gives up with ErrOverloaded; it is never sent.
	const timeout = 10 * time.Millisecond
	start := time.Now()
	_, err := s.DecideWithin(context.Background(), timeout, []Ask{{Key: key("late"), Limit: limit, Cost: 1}})
	if !errors.Is(err, ErrOverloaded) {
		t.Errorf("call queued past the wait bound: %v, want ErrOverloaded", err)
	}
	if d := time.Since(start); d > coalesceMaxWait+2*timeout+time.Second {
		t.Errorf("call queued past the wait bound returned after %v", d)
	}

	// Fill the queue (calls without a timeout wait as long as it takes).
	for range coalesceMaxQueue - 1 { // the abandoned call still holds a place
		wg.Go(func() {
			if _, err := s.Decide(context.Background(), []Ask{{Key: key("queued"), Limit: limit, Cost: 1}}); err != nil {
				t.Errorf("queued call: %v", err)
			}
		})
	}
	queued(t, s.co, coalesceMaxQueue)
	start = time.Now()
	_, err = s.Decide(context.Background(), []Ask{{Key: key("over"), Limit: limit, Cost: 1}})
	if !errors.Is(err, ErrOverloaded) {
		t.Errorf("call past the queue bound: %v, want ErrOverloaded", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("call past the queue bound returned after %v, want at once", d)
	}
	close(release)
	wg.Wait()

	for k, want := range map[string]int64{"late": 0, "over": 0, "queued": 1, "held": 1} {
		if n, err := c.Exists(context.Background(), key(k)).Result(); err != nil || n != want {
			t.Errorf("key %s: EXISTS = %d, %v; want %d (only what was sent is charged)", k, n, err, want)
		}
	}
}

package limiter

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
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

// slowTrips delays each script round trip by up to max, at random.
type slowTrips struct{ max time.Duration }

func (h slowTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		time.Sleep(rand.N(h.max))
		return next(ctx, cmd)
	}
}

func (h slowTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Callers that give up at random, while their call queues, while it is
// in flight or while it sends its batch, never strand one: every call
// returns, the coalescer ends idle, and the units charged lie between the
// decisions that came back allowed and those plus the abandoned ones.
func TestCoalescerSurvivesCallersLeaving(t *testing.T) {
	c, prefix := timedRedis(t)
	c.AddHook(slowTrips{max: time.Millisecond})
	s := NewRedisStore(c)
	ask := Ask{Key: StoreKey(prefix, "co", "", "handoff"), Limit: Limit{Algorithm: FixedWindow, Events: 1 << 30, Window: time.Hour}, Cost: 1}
	var allowed, gaveUp atomic.Int64
	var wg sync.WaitGroup
	for range 300 {
		wg.Go(func() {
			for range 20 {
				ctx, cancel := context.WithTimeout(context.Background(), rand.N(20*time.Millisecond))
				res, err := s.DecideWithin(ctx, time.Second, []Ask{ask})
				cancel()
				switch {
				case err == nil && res[0].Allowed:
					allowed.Add(1)
				case errors.Is(err, context.DeadlineExceeded):
					gaveUp.Add(1)
				case errors.Is(err, ErrOverloaded): // gone callers fill the queue: nothing charged
				case err != nil:
					t.Errorf("DecideWithin: %v", err)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("callers still waiting after 60 s: a batch was stranded")
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		s.co.mu.Lock()
		idle := s.co.inFlight == 0 && len(s.co.queue) == 0
		s.co.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the coalescer never went idle")
		}
	}
	res, err := s.DecideWithin(context.Background(), time.Second, []Ask{ask})
	if err != nil || !res[0].Allowed {
		t.Fatalf("a decision after the storm: %v, %v", res, err)
	}
	used := (1 << 30) - res[0].Remaining - 1
	if used < allowed.Load() || used > allowed.Load()+gaveUp.Load() {
		t.Errorf("units charged %d: want between the %d allowed and %d (allowed + gave up)", used, allowed.Load(), allowed.Load()+gaveUp.Load())
	}
	if gaveUp.Load() == 0 || allowed.Load() == 0 {
		t.Errorf("allowed %d, gave up %d: the storm should have both", allowed.Load(), gaveUp.Load())
	}
	t.Logf("allowed %d, gave up %d", allowed.Load(), gaveUp.Load())
}

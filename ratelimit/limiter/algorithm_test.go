package limiter

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

var allAlgorithms = []string{TokenBucket, SlidingWindow, FixedWindow, SlidingLog, LeakyBucket}

// testClock is an injectable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// clockedStore is a Store whose clock the test sets: the memory store, or
// the Redis script on miniredis.
type clockedStore struct {
	name   string
	store  Store
	set    func(time.Time) // no-op on a real Redis
	prefix string          // key prefix (test isolation on a real Redis)
}

// traceBase is a whole second, so windows of 1s start on it.
var traceBase = time.Unix(1_800_000_000, 0)

func newMemoryClocked(t *testing.T) clockedStore {
	clock := newTestClock(traceBase)
	return clockedStore{name: "memory", store: NewMemoryStore(clock.Now, 0), set: clock.Set}
}

// ask1 decides a single Ask and fails the test on error.
func ask1(t *testing.T, s Store, a Ask) Result {
	t.Helper()
	res, err := s.Decide(context.Background(), []Ask{a})
	if err != nil {
		t.Fatalf("Decide(%+v): %v", a, err)
	}
	if len(res) != 1 {
		t.Fatalf("Decide returned %d results, want 1", len(res))
	}
	return res[0]
}

// burst sends n asks and returns how many passed.
func burst(t *testing.T, s Store, a Ask, n int) int {
	t.Helper()
	allowed := 0
	for range n {
		if ask1(t, s, a).Allowed {
			allowed++
		}
	}
	return allowed
}

// testBoundaryTrace sends bursts of 10 requests at 0.9s, 1.001s and 1.502s
// after a window boundary (events 10, window 1s; leaky bucket burst 9) and
// checks each algorithm's defining behaviour.
func testBoundaryTrace(t *testing.T, newStore func(t *testing.T) clockedStore) {
	want := map[string][3]int{
		FixedWindow:   {10, 10, 0}, // 2× events within 0.1s across the boundary
		SlidingWindow: {10, 0, 5},  // estimate 10×0.999 blocks; 10×0.498 leaves 5
		SlidingLog:    {10, 0, 0},  // never more than events in any window
		TokenBucket:   {10, 1, 5},  // refill of 10/s
		LeakyBucket:   {10, 1, 5},  // queue of 9 draining at 10/s
	}
	offsets := []time.Duration{900 * time.Millisecond, 1001 * time.Millisecond, 1502 * time.Millisecond}
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			cs := newStore(t)
			a := Ask{Key: "boundary:" + alg, Limit: Limit{Algorithm: alg, Events: 10, Window: time.Second}, Cost: 1}
			if alg == LeakyBucket {
				a.Limit.Burst = 9
			}
			for i, off := range offsets {
				cs.set(traceBase.Add(off))
				if got := burst(t, cs.store, a, 10); got != want[alg][i] {
					t.Errorf("%s: burst at %s: %d allowed, want %d", cs.name, off, got, want[alg][i])
				}
			}
		})
	}
}

func TestAlgorithmBoundaryTraceMemory(t *testing.T) {
	testBoundaryTrace(t, newMemoryClocked)
}

// testRetryAfterExact fills a bucket/window until refused, then checks the
// Ask still fails 1µs before RetryAfter and passes at RetryAfter.
func testRetryAfterExact(t *testing.T, newStore func(t *testing.T) clockedStore) {
	limits := []struct {
		name  string
		limit Limit
		cost  int64
	}{
		{"10per1s", Limit{Events: 10, Window: time.Second}, 1},
		{"7per1m", Limit{Events: 7, Window: time.Minute}, 1},
		{"7per1m-cost3", Limit{Events: 7, Window: time.Minute}, 3},
		{"3per10s-burst5", Limit{Events: 3, Window: 10 * time.Second, Burst: 5}, 1},
	}
	for _, alg := range allAlgorithms {
		for _, l := range limits {
			t.Run(alg+"/"+l.name, func(t *testing.T) {
				cs := newStore(t)
				a := Ask{Key: "retry:" + alg, Limit: l.limit, Cost: l.cost}
				a.Limit.Algorithm = alg
				if alg == LeakyBucket && a.Cost > 1 && a.Limit.Burst == 0 {
					a.Limit.Burst = 4 // room for a request of 3 (else never)
				}
				now := traceBase.Add(123_457 * time.Microsecond)
				var r Result
				for i := 0; i < 50; i++ {
					now = now.Add(7_919 * time.Microsecond)
					cs.set(now)
					if r = ask1(t, cs.store, a); !r.Allowed {
						break
					}
				}
				if r.Allowed {
					t.Fatalf("%s: never refused", cs.name)
				}
				if r.RetryAfter <= 0 {
					t.Fatalf("%s: refused with RetryAfter %s", cs.name, r.RetryAfter)
				}
				cs.set(now.Add(r.RetryAfter - time.Microsecond))
				if early := ask1(t, cs.store, a); early.Allowed {
					t.Errorf("%s: allowed 1µs before RetryAfter %s", cs.name, r.RetryAfter)
				}
				cs.set(now.Add(r.RetryAfter))
				if on := ask1(t, cs.store, a); !on.Allowed {
					t.Errorf("%s: refused at RetryAfter %s (retry %s)", cs.name, r.RetryAfter, on.RetryAfter)
				}
			})
		}
	}
}

func TestAlgorithmRetryAfterExactMemory(t *testing.T) {
	testRetryAfterExact(t, newMemoryClocked)
}

// randomTrace drives a store under steady overload (about 3 requests per
// 10ms against 10 per second) for 5 windows and returns the times of the
// allowed requests.
func randomTrace(t *testing.T, cs clockedStore, alg string, seed uint64) []time.Time {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	a := Ask{Key: "random:" + alg, Limit: Limit{Algorithm: alg, Events: 10, Window: time.Second, Burst: 3}, Cost: 1}
	var allowed []time.Time
	now := traceBase.Add(time.Duration(rng.IntN(1_000_000)) * time.Microsecond)
	end := now.Add(5 * time.Second)
	for now.Before(end) {
		now = now.Add(time.Duration(rng.IntN(20_000)) * time.Microsecond)
		cs.set(now)
		for range rng.IntN(6) {
			if ask1(t, cs.store, a).Allowed {
				allowed = append(allowed, now)
			}
		}
	}
	return allowed
}

// maxInWindow is the largest number of times within any window (t−w, t].
func maxInWindow(times []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi := range times {
		for !times[lo].After(times[hi].Add(-w)) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestAlgorithmSteadyOverloadMemory(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			allowed := randomTrace(t, newMemoryClocked(t), alg, 42)
			checkSteadyOverload(t, alg, allowed)
		})
	}
}

// checkSteadyOverload asserts what each algorithm promises over 5 windows
// of 10 events under overload.
func checkSteadyOverload(t *testing.T, alg string, allowed []time.Time) {
	t.Helper()
	peak := maxInWindow(allowed, time.Second)
	total := len(allowed)
	switch alg {
	case SlidingLog:
		if peak > 10 {
			t.Errorf("sliding log: %d allowed within one window, want <= 10", peak)
		}
		if total < 45 || total > 50 {
			t.Errorf("sliding log: %d allowed in 5 windows, want 45..50", total)
		}
	case FixedWindow:
		if total < 45 || total > 60 {
			t.Errorf("fixed window: %d allowed in 5 windows, want 45..60", total)
		}
		if peak > 20 {
			t.Errorf("fixed window: %d allowed within one window, want <= 20", peak)
		}
	case SlidingWindow, TokenBucket, LeakyBucket:
		// close to events: a little over in a window at most (token bucket:
		// its burst of 3 on top of the refill).
		if peak > 14 {
			t.Errorf("%s: %d allowed within one window, want close to 10", alg, peak)
		}
		if total < 45 || total > 55 {
			t.Errorf("%s: %d allowed in 5 windows, want 45..55", alg, total)
		}
	}
}

func TestAlgorithmParamsValidation(t *testing.T) {
	bad := []Ask{
		{Key: "k", Limit: Limit{Algorithm: "nope", Events: 1, Window: time.Second}},
		{Key: "k", Limit: Limit{Algorithm: TokenBucket, Events: 0, Window: time.Second}},
		{Key: "k", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Microsecond}},
		{Key: "k", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Second, Burst: -1}},
		{Key: "k", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Second}, Cost: -1},
	}
	s := NewMemoryStore(nil, 0)
	for _, a := range bad {
		if _, err := s.Decide(context.Background(), []Ask{a}); err == nil {
			t.Errorf("Decide(%+v) = nil error, want an error", a)
		}
	}
}

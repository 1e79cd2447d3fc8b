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

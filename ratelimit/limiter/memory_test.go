package limiter

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestMemoryConcurrentExact(t *testing.T) {
	s := NewMemoryStore(nil, 0)
	a := Ask{Key: "api-key", Limit: Limit{Algorithm: TokenBucket, Events: 100, Window: time.Minute}, Cost: 1}
	checkExactQuota(t, "500 concurrent asks", concurrentResults(t, []Store{s}, [][]Ask{{a}}, 500), a.Limit)
}

// concurrentResults sends n decisions (asks[i%len(asks)]) from n goroutines
// spread over the stores, and returns the results.
func concurrentResults(t *testing.T, stores []Store, asks [][]Ask, n int) [][]Result {
	t.Helper()
	var mu sync.Mutex
	var all [][]Result
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		s, a := stores[i%len(stores)], asks[i%len(asks)]
		wg.Go(func() {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := s.Decide(ctx, a)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			all = append(all, res)
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Decide: %v", err)
	}
	return all
}

// checkExactQuota requires that exactly the quota of a full token bucket
// passed (every ask of a decision allowed): Events, plus what refilled
// (Events per Window) between the first and the last decision — nothing
// when they took less than Window/Events, as they normally do.
func checkExactQuota(t *testing.T, what string, results [][]Result, l Limit) int {
	t.Helper()
	allowed := 0
	first, last := results[0][0].Now, results[0][0].Now
	for _, res := range results {
		if allAllowed(res) {
			allowed++
		}
		for _, r := range res {
			first, last = minTime(first, r.Now), maxTime(last, r.Now)
		}
	}
	refilled := int(int64(last.Sub(first)) * l.Events / int64(l.Window))
	if allowed < int(l.Events) || allowed > int(l.Events)+refilled {
		t.Errorf("%s: %d allowed, want %d (+%d refilled in %s)", what, allowed, l.Events, refilled, last.Sub(first))
	}
	return allowed
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func TestMemoryLRUBound(t *testing.T) {
	clock := newTestClock(traceBase)
	s := NewMemoryStore(clock.Now, 100)
	l := Limit{Algorithm: SlidingLog, Events: 1, Window: time.Hour}
	for i := range 10000 {
		ask1(t, s, Ask{Key: "flood:" + strconv.Itoa(i), Limit: l, Cost: 1})
		if n := s.Len(); n > 100 {
			t.Fatalf("after %d keys: %d held, want <= 100", i+1, n)
		}
	}
	// The most recent keys keep their state; the oldest were dropped.
	if r := ask1(t, s, Ask{Key: "flood:9999", Limit: l, Cost: 1}); r.Allowed {
		t.Error("recent key flood:9999 lost its state")
	}
	if r := ask1(t, s, Ask{Key: "flood:0", Limit: l, Cost: 1}); !r.Allowed {
		t.Error("evicted key flood:0 still refused")
	}
}

func TestMemoryExpiresIdleState(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			clock := newTestClock(traceBase)
			s := NewMemoryStore(clock.Now, 0)
			a := Ask{Key: "idle", Limit: Limit{Algorithm: alg, Events: 2, Window: time.Second}, Cost: 1}
			ask1(t, s, a)
			if s.Len() != 1 {
				t.Fatalf("%d keys held, want 1", s.Len())
			}
			clock.Set(traceBase.Add(3 * time.Second))     // past every TTL
			ask1(t, s, Ask{Key: "other", Limit: a.Limit}) // cost 0: no state
			if n := s.Len(); n != 0 {
				t.Errorf("%d keys held after the TTL, want 0", n)
			}
		})
	}
}

func TestMemoryHugeEventsAllocateLittle(t *testing.T) {
	s := NewMemoryStore(nil, 0)
	for _, alg := range allAlgorithms {
		i := 0
		allocs := testing.AllocsPerRun(20, func() {
			i++
			a := Ask{Key: fmt.Sprintf("huge:%s:%d", alg, i%3), Limit: Limit{Algorithm: alg, Events: 1_000_000_000, Window: time.Hour, Burst: 1000}, Cost: 1}
			if _, err := s.Decide(context.Background(), []Ask{a}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 8 {
			t.Errorf("%s with events 1e9: %.0f allocs per decision, want a few", alg, allocs)
		}
	}
}

func TestMemoryHotPathAllocs(t *testing.T) {
	s := NewMemoryStore(nil, 0)
	for _, alg := range allAlgorithms {
		asks := []Ask{{Key: "hot:" + alg, Limit: Limit{Algorithm: alg, Events: 1 << 40, Window: time.Hour}, Cost: 1}}
		allocs := testing.AllocsPerRun(1000, func() {
			if _, err := s.Decide(context.Background(), asks); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 2 {
			t.Errorf("%s: %.1f allocs per decision on an existing key, want <= 2", alg, allocs)
		}
	}
}

func benchmarkMemoryStore(b *testing.B, alg string) {
	s := NewMemoryStore(nil, 0)
	asks := []Ask{{Key: StoreKey("rl", "api", "", "client-1"), Limit: Limit{Algorithm: alg, Events: 1 << 40, Window: time.Hour}, Cost: 1}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Decide(ctx, asks); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryStoreTokenBucket(b *testing.B)   { benchmarkMemoryStore(b, TokenBucket) }
func BenchmarkMemoryStoreSlidingWindow(b *testing.B) { benchmarkMemoryStore(b, SlidingWindow) }
func BenchmarkMemoryStoreFixedWindow(b *testing.B)   { benchmarkMemoryStore(b, FixedWindow) }
func BenchmarkMemoryStoreSlidingLog(b *testing.B)    { benchmarkMemoryStore(b, SlidingLog) }
func BenchmarkMemoryStoreLeakyBucket(b *testing.B)   { benchmarkMemoryStore(b, LeakyBucket) }

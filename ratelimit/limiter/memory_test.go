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

func TestAlgorithmAllOrNothingMemory(t *testing.T) {
	testAllOrNothing(t, newMemoryClocked)
}

// testAllOrNothing: two asks where the second refuses charge neither.
func testAllOrNothing(t *testing.T, newStore func(t *testing.T) clockedStore) {
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			cs := newStore(t)
			cs.set(traceBase.Add(100 * time.Millisecond))
			open := Ask{Key: cs.prefix + "zone-a:" + alg, Limit: Limit{Algorithm: alg, Events: 5, Window: time.Hour, Burst: 5}, Cost: 1}
			full := Ask{Key: cs.prefix + "zone-b:" + alg, Limit: Limit{Algorithm: alg, Events: 1, Window: time.Hour}, Cost: 1}
			if !ask1(t, cs.store, full).Allowed {
				t.Fatal("first ask on zone b refused")
			}
			before := ask1(t, cs.store, Ask{Key: open.Key, Limit: open.Limit}) // cost 0: look
			res, err := cs.store.Decide(context.Background(), []Ask{open, full})
			if err != nil {
				t.Fatal(err)
			}
			if !res[0].Allowed || res[1].Allowed {
				t.Fatalf("results %+v, want zone a allowed, zone b refused", res)
			}
			after := ask1(t, cs.store, Ask{Key: open.Key, Limit: open.Limit})
			if after.Remaining != before.Remaining {
				t.Errorf("zone a remaining %d after a refused request, want %d (not charged)", after.Remaining, before.Remaining)
			}
			if got := burst(t, cs.store, open, 10); got != int(before.Remaining) {
				t.Errorf("zone a: %d of 10 allowed afterwards, want all %d", got, before.Remaining)
			}
		})
	}
}

func TestAlgorithmCostMemory(t *testing.T) {
	testCost(t, newMemoryClocked)
}

// testCost: cost 0 checks without taking, cost > 1 takes several units.
func testCost(t *testing.T, newStore func(t *testing.T) clockedStore) {
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			cs := newStore(t)
			cs.set(traceBase.Add(10 * time.Millisecond))
			l := Limit{Algorithm: alg, Events: 10, Window: time.Hour}
			if alg == LeakyBucket {
				l.Burst = 9 // 10 may queue
			}
			check := Ask{Key: cs.prefix + "cost:" + alg, Limit: l}
			for range 20 {
				if r := ask1(t, cs.store, check); !r.Allowed || r.Remaining != 10 {
					t.Fatalf("cost 0 on a fresh key: %+v, want allowed with 10 remaining", r)
				}
			}
			three := Ask{Key: check.Key, Limit: l, Cost: 3}
			for i, want := range []int64{7, 4, 1} {
				r := ask1(t, cs.store, three)
				if !r.Allowed || r.Remaining != want {
					t.Fatalf("cost 3 #%d: %+v, want allowed with %d remaining", i+1, r, want)
				}
			}
			if r := ask1(t, cs.store, three); r.Allowed || r.Remaining != 1 {
				t.Fatalf("cost 3 with 1 Left: %+v, want refused with 1 remaining", r)
			}
			if r := ask1(t, cs.store, check); !r.Allowed || r.Remaining != 1 {
				t.Fatalf("cost 0 with 1 Left: %+v, want allowed", r)
			}
			if r := ask1(t, cs.store, Ask{Key: check.Key, Limit: l, Cost: 1}); !r.Allowed || r.Remaining != 0 {
				t.Fatalf("cost 1 with 1 Left: %+v, want allowed with 0 remaining", r)
			}
			if r := ask1(t, cs.store, check); r.Allowed || r.RetryAfter <= 0 {
				t.Fatalf("cost 0 with nothing Left: %+v, want refused with a RetryAfter", r)
			}
			if r := ask1(t, cs.store, Ask{Key: cs.prefix + "cost-big:" + alg, Limit: l, Cost: 11}); r.Allowed {
				t.Fatalf("cost 11 > events 10: allowed")
			}
		})
	}
}

func TestAlgorithmLoweredBurstMemory(t *testing.T) {
	testLoweredBurst(t, newMemoryClocked)
}

// testLoweredBurst: a bucket stored under burst 10 holds at most the new,
// lower burst.
func testLoweredBurst(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	cs.set(traceBase)
	a := Ask{Key: cs.prefix + "burst", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Hour, Burst: 10}, Cost: 2}
	if r := ask1(t, cs.store, a); !r.Allowed || r.Remaining != 8 {
		t.Fatalf("burst 10, cost 2: %+v, want 8 remaining", r)
	}
	a.Limit.Burst, a.Cost = 5, 1
	if r := ask1(t, cs.store, a); !r.Allowed || r.Remaining != 4 {
		t.Fatalf("burst lowered to 5, cost 1: %+v, want 4 remaining (min(5, 8) - 1)", r)
	}
	if got := burst(t, cs.store, a, 10); got != 4 {
		t.Errorf("after lowering burst: %d allowed, want 4", got)
	}
}

func TestAlgorithmChangeMemory(t *testing.T) {
	testAlgorithmChange(t, newMemoryClocked)
}

// testAlgorithmChange: a zone whose algorithm changes (a config reload)
// keeps working on the same key: state of another algorithm reads as
// absent.
func testAlgorithmChange(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	cs.set(traceBase.Add(time.Millisecond))
	key := cs.prefix + "changing"
	sequence := []string{
		SlidingLog, TokenBucket, SlidingLog, LeakyBucket, SlidingLog, FixedWindow, SlidingLog, SlidingWindow,
		TokenBucket, LeakyBucket, FixedWindow, SlidingWindow, FixedWindow, TokenBucket,
	}
	for i, alg := range sequence {
		a := Ask{Key: key, Limit: Limit{Algorithm: alg, Events: 10, Window: time.Hour, Burst: 4}, Cost: 3}
		fresh := ask1(t, NewMemoryStore(func() time.Time { return traceBase }, 0), a)
		if i > 0 {
			// the previous algorithm's state, charged twice
			ask1(t, cs.store, Ask{Key: key, Limit: Limit{Algorithm: sequence[i-1], Events: 10, Window: time.Hour, Burst: 4}, Cost: 3})
		}
		if r := ask1(t, cs.store, a); !r.Allowed || r.Remaining != fresh.Remaining {
			t.Fatalf("%s after %s: %+v, want allowed with %d remaining as on a fresh key", alg, sequence[max(i-1, 0)], r, fresh.Remaining)
		}
	}
}

func TestAlgorithmLeakyBucketQueueMemory(t *testing.T) {
	testLeakyQueue(t, newMemoryClocked)
}

// testLeakyQueue: 10/s with a queue of 3: four pass at once with delays
// 0, 100, 200 and 300ms, the fifth is refused until one has left.
func testLeakyQueue(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	now := traceBase.Add(250 * time.Millisecond)
	cs.set(now)
	a := Ask{Key: "queue", Limit: Limit{Algorithm: LeakyBucket, Events: 10, Window: time.Second, Burst: 3}, Cost: 1}
	for i := range 4 {
		r := ask1(t, cs.store, a)
		want := time.Duration(i) * 100 * time.Millisecond
		if !r.Allowed || r.Delay != want || r.Remaining != int64(3-i) {
			t.Fatalf("request %d: %+v, want allowed, delay %s, remaining %d", i+1, r, want, 3-i)
		}
	}
	r := ask1(t, cs.store, a)
	if r.Allowed || r.RetryAfter != 100*time.Millisecond || r.Reset != 400*time.Millisecond {
		t.Fatalf("request 5: %+v, want refused, retry 100ms, reset 400ms", r)
	}
	cs.set(now.Add(100 * time.Millisecond))
	if r := ask1(t, cs.store, a); !r.Allowed || r.Delay != 300*time.Millisecond {
		t.Fatalf("after 100ms: %+v, want allowed with delay 300ms", r)
	}
	noQueue := Ask{Key: "no-queue", Limit: Limit{Algorithm: LeakyBucket, Events: 10, Window: time.Second}, Cost: 1}
	if got := burst(t, cs.store, noQueue, 5); got != 1 {
		t.Errorf("burst 0: %d of 5 allowed at once, want 1", got)
	}
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

package limiter

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// benchmarkMemoryStoreEvict decides a new key per request on a full store:
// every decision evicts one key (the flood max_keys bounds).
func BenchmarkMemoryStoreEvict(b *testing.B) {
	const maxKeys = 10000
	s := NewMemoryStore(nil, maxKeys)
	l := Limit{Algorithm: TokenBucket, Events: 5, Window: time.Minute}
	keys := make([]string, 4*maxKeys)
	for i := range keys {
		keys[i] = StoreKey("rl", "api", "", "client-"+strconv.Itoa(i))
	}
	ctx := context.Background()
	asks := make([]Ask, 1)
	for i := range maxKeys {
		asks[0] = Ask{Key: keys[i], Limit: l, Cost: 1}
		if _, err := s.Decide(ctx, asks); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		asks[0] = Ask{Key: keys[i%len(keys)], Limit: l, Cost: 1}
		if _, err := s.Decide(ctx, asks); err != nil {
			b.Fatal(err)
		}
	}
}

// A client picking many key values cannot reset another key's refusal by
// flooding the store: with the refused key plus max_keys distinct keys
// each used once (or not at all), the refused key stays refused, for
// every algorithm.
func TestMemoryFloodKeepsRefusedKey(t *testing.T) {
	const maxKeys = 100
	for _, alg := range allAlgorithms {
		for _, flood := range []int64{0, 1} {
			t.Run(alg+"/cost"+strconv.FormatInt(flood, 10), func(t *testing.T) {
				clock := newTestClock(traceBase)
				s := NewMemoryStore(clock.Now, maxKeys)
				l := Limit{Algorithm: alg, Events: 5, Window: time.Minute}
				if alg == LeakyBucket {
					l.Burst = 4 // 5 at once, as the others
				}
				victim := Ask{Key: "victim", Limit: l, Cost: 1}
				if got := burst(t, s, victim, 6); got != 5 {
					t.Fatalf("%d of 6 allowed, want the quota", got)
				}
				if ask1(t, s, victim).Allowed {
					t.Fatal("victim not refused before the flood")
				}
				for i := range 10 * maxKeys {
					clock.Set(traceBase.Add(time.Duration(i) * time.Millisecond))
					ask1(t, s, Ask{Key: "attacker:" + strconv.Itoa(i), Limit: l, Cost: flood})
				}
				if n := s.Len(); n > maxKeys {
					t.Errorf("%d keys held, want <= %d", n, maxKeys)
				}
				if r := ask1(t, s, victim); r.Allowed {
					t.Errorf("the flood of %d keys reset the refused key", 10*maxKeys)
				}
			})
		}
	}
}

// A key whose state equals a fresh one goes before any key in use, even a
// recently used one.
func TestMemoryEvictsFreshFirst(t *testing.T) {
	clock := newTestClock(traceBase)
	s := NewMemoryStore(clock.Now, 3)
	l := Limit{Algorithm: TokenBucket, Events: 10, Window: 10 * time.Second}
	ask1(t, s, Ask{Key: "half", Limit: l, Cost: 5}) // the least recently used
	clock.Set(traceBase.Add(500 * time.Millisecond))
	ask1(t, s, Ask{Key: "refilled", Limit: l, Cost: 1}) // full again after 1s
	clock.Set(traceBase.Add(2 * time.Second))
	ask1(t, s, Ask{Key: "used", Limit: l, Cost: 1})
	ask1(t, s, Ask{Key: "new", Limit: l, Cost: 1}) // one must go: "refilled"
	if r := ask1(t, s, Ask{Key: "half", Limit: l, Cost: 0}); r.Remaining >= 9 {
		t.Errorf("half-used key dropped (remaining %d) while a refilled key was held", r.Remaining)
	}
}

// The residual risk, measured: to drop a refused key, a client must first
// use up the quota of the memoryEvictScan−1 keys weighed beside it, then
// flood the store. It gains one quota of the victim for 15 spent.
func TestMemoryEvictionCost(t *testing.T) {
	const maxKeys = 100
	for _, usedUp := range []int{memoryEvictScan - 2, memoryEvictScan - 1} {
		clock := newTestClock(traceBase)
		s := NewMemoryStore(clock.Now, maxKeys)
		l := Limit{Algorithm: TokenBucket, Events: 5, Window: time.Minute}
		ask1(t, s, Ask{Key: "victim", Limit: l, Cost: 5})
		for i := range usedUp {
			ask1(t, s, Ask{Key: "used-up:" + strconv.Itoa(i), Limit: l, Cost: 5})
		}
		for i := range maxKeys {
			ask1(t, s, Ask{Key: "junk:" + strconv.Itoa(i), Limit: l, Cost: 1})
		}
		dropped := ask1(t, s, Ask{Key: "victim", Limit: l, Cost: 1}).Allowed
		if want := usedUp >= memoryEvictScan-1; dropped != want {
			t.Errorf("%d used-up keys beside the victim: dropped %v, want %v", usedUp, dropped, want)
		}
	}
}

// FuzzMemoryEvictionKeepsRefused: whatever the algorithm, quota and bound
// (max_keys >= 2), a refused key stays refused until its Retry-After while
// a client floods the store with new keys, each used once; and the store
// never holds more than max_keys keys.
func FuzzMemoryEvictionKeepsRefused(f *testing.F) {
	f.Add(uint8(0), uint8(5), uint8(0), uint8(10), []byte{200, 3, 50, 9, 255, 0})
	f.Add(uint8(4), uint8(2), uint8(1), uint8(2), []byte{40, 1, 40, 1})
	f.Add(uint8(2), uint8(9), uint8(3), uint8(30), []byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, alg, events, burst, maxKeys uint8, steps []byte) {
		l := Limit{Algorithm: allAlgorithms[int(alg)%len(allAlgorithms)], Events: 2 + int64(events%30), Window: time.Minute}
		switch l.Algorithm {
		case LeakyBucket:
			l.Burst = 1 + int64(burst%10) // one unit never fills the queue
		case TokenBucket:
			l.Burst = int64(burst % 40)
			if l.Burst == 1 {
				l.Burst = 2
			}
		}
		bound := 2 + int(maxKeys%60)
		clock := newTestClock(traceBase.Add(time.Duration(events) * 7919 * time.Microsecond))
		s := NewMemoryStore(clock.Now, bound)
		victim := Ask{Key: "victim", Limit: l, Cost: 1}
		var refused Result
		for range l.Capacity() + 1 + l.Burst {
			if refused = ask1(t, s, victim); !refused.Allowed {
				break
			}
		}
		if refused.Allowed {
			t.Fatalf("%+v: never refused", l)
		}
		start, now := clock.Now(), clock.Now()
		key := 0
		for i := 0; i+1 < len(steps); i += 2 {
			now = now.Add(time.Duration(steps[i]) * time.Millisecond)
			if now.Sub(start) >= refused.RetryAfter {
				break
			}
			clock.Set(now)
			for range int(steps[i+1]) % 200 {
				key++
				ask1(t, s, Ask{Key: "attacker:" + strconv.Itoa(key), Limit: l, Cost: 1})
			}
			if n := s.Len(); n > bound {
				t.Fatalf("%d keys held, want <= max_keys %d", n, bound)
			}
		}
		if r := ask1(t, s, Ask{Key: "victim", Limit: l, Cost: 1}); r.Allowed {
			t.Errorf("%+v, max_keys %d: the victim passed %s after its refusal (Retry-After %s), after %d new keys",
				l, bound, now.Sub(start), refused.RetryAfter, key)
		}
	})
}

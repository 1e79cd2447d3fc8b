package limiter

// The store conformance suite: every store (the memory store, the Redis
// script on miniredis with a clock the test sets, the real Redis, Redis
// Cluster across slots and in one slot) passes the same checks of the
// algorithms' behaviour. Checks that need a clock the test sets run on the
// clocked stores only.

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// conformanceStores are the stores the suite runs on.
var conformanceStores = []struct {
	name    string
	new     func(t *testing.T) clockedStore
	clocked bool // the test sets its clock
	redis   bool // a RedisStore
}{
	{"memory", newMemoryClocked, true, false},
	{"miniredis", newMiniredisClocked, true, true},
	{"redis", realRedis, false, true},
	{"cluster", realCluster(false), false, true},
	{"cluster one slot", realCluster(true), false, true},
}

// conformanceCheck is one check of the suite.
type conformanceCheck struct {
	name  string
	check func(t *testing.T, newStore func(t *testing.T) clockedStore)
	clock bool // needs a clocked store
	redis bool // needs a RedisStore
}

// conformanceChecks are the checks every store passes.
var conformanceChecks = []conformanceCheck{
	{"boundary trace", testBoundaryTrace, true, false},
	{"retry after exact", testRetryAfterExact, true, false},
	{"leaky bucket queue", testLeakyQueue, true, false},
	{"all or nothing", testAllOrNothing, false, false},
	{"cost", testCost, false, false},
	{"lowered burst", testLoweredBurst, false, false},
	{"algorithm change", testAlgorithmChange, false, false},
	{"absorb", testAbsorb, false, true},
	{"ban escalation", testBanEscalation, true, false},
	{"ban counts refusals only", testBanRefusalsOnly, false, false},
	{"ban list and lift", testBanListLift, false, false},
	{"first refusal", testNotifyFirst, true, false},
	{"first refusal with a ban", testNotifyBan, true, false},
	{"first refusal concurrent", testNotifyConcurrent, false, false},
	{"first refusal absorbed", testNotifyAbsorb, false, true},
}

func TestConformance(t *testing.T) {
	for _, s := range conformanceStores {
		t.Run(s.name, func(t *testing.T) {
			for _, c := range conformanceChecks {
				if c.clock && !s.clocked || c.redis && !s.redis {
					continue
				}
				t.Run(c.name, func(t *testing.T) { c.check(t, s.new) })
			}
		})
	}
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

// realRedis is the shared test Redis as a clockedStore (real time).
func realRedis(t *testing.T) clockedStore {
	c, prefix := testenv.Redis(t)
	return clockedStore{name: "redis", store: NewRedisStore(c), set: func(time.Time) {}, prefix: prefix + ":"}
}

// realCluster is the test Redis Cluster; sameSlot puts every key of the
// test in one slot with a hash tag.
func realCluster(sameSlot bool) func(t *testing.T) clockedStore {
	return func(t *testing.T) clockedStore {
		c, prefix := testenv.RedisCluster(t)
		p := prefix + ":"
		if sameSlot {
			p = prefix + ":{tag}:"
		}
		return clockedStore{name: "cluster", store: NewRedisStore(c), set: func(time.Time) {}, prefix: p}
	}
}

func newMiniredisClocked(t *testing.T) clockedStore {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	cur := traceBase
	m.SetTime(cur)
	return clockedStore{name: "miniredis", store: NewRedisStore(c), set: func(at time.Time) {
		if d := at.Sub(cur); d > 0 {
			m.FastForward(d) // expire keys as time passes
		}
		cur = at
		m.SetTime(at)
	}}
}

// The script's absorb mode (mode 'a'): every unit charged, past the quota
// into debt, the state after returned as a check sees it.
func testAbsorb(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	s := cs.store.(*RedisStore)
	ctx := context.Background()
	for _, alg := range []string{TokenBucket, SlidingWindow, FixedWindow} {
		t.Run(alg, func(t *testing.T) {
			l := Limit{Algorithm: alg, Events: 10, Window: time.Hour}
			a := Ask{Key: cs.prefix + "absorb:" + alg, Limit: l}
			absorb := func(cost int64) Result {
				t.Helper()
				a.Cost = cost
				res, err := s.Absorb(ctx, []Ask{a})
				if err != nil {
					t.Fatalf("absorb %d: %v", cost, err)
				}
				return res[0]
			}
			if r := absorb(4); !r.Allowed || r.Remaining != 6 {
				t.Fatalf("4 of 10 absorbed: %+v, want allowed with 6 left", r)
			}
			if r := ask1(t, s, Ask{Key: a.Key, Limit: l}); !r.Allowed || r.Remaining != 6 {
				t.Fatalf("a check after: %+v, want 6 left", r)
			}
			if r := absorb(0); !r.Allowed || r.Remaining != 6 {
				t.Fatalf("absorbing nothing: %+v, want 6 left (a check)", r)
			}
			// 9 more: 3 past the quota, all charged.
			r := absorb(9)
			if r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 {
				t.Fatalf("9 more absorbed: %+v, want refused, 0 left, a retry time", r)
			}
			if r := ask1(t, s, Ask{Key: a.Key, Limit: l, Cost: 1}); r.Allowed {
				t.Fatalf("a request after the debt: %+v, want refused", r)
			}
			if alg == TokenBucket {
				// -3 tokens: 4 must refill (6 min at 10/h) before one passes.
				if r.RetryAfter < 4*time.Hour/10-time.Second {
					t.Errorf("retry after %v, want about %v (the debt repaid first)", r.RetryAfter, 4*time.Hour/10)
				}
			}
		})
	}
	// Keys of one call are independent; a key of another algorithm's
	// state reads as absent.
	l := Limit{Algorithm: FixedWindow, Events: 5, Window: time.Hour}
	res, err := s.Absorb(ctx, []Ask{
		{Key: cs.prefix + "absorb:x", Limit: l, Cost: 2},
		{Key: cs.prefix + "absorb:y", Limit: l, Cost: 7},
		{Key: cs.prefix + "absorb:" + TokenBucket, Limit: l, Cost: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Remaining != 3 || !res[0].Allowed || res[1].Allowed || res[1].Remaining != 0 || res[2].Remaining != 4 {
		t.Errorf("three keys in one call: %+v", res)
	}
}

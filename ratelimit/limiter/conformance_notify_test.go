package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The first-refusal checks of the conformance suite (Ask.Notify; see
// conformanceChecks).

// testNotifyFirst: of a key's refusals, the first of its window reports
// First, the others not; a window after the first refusal the next one is
// first again; asks without Notify or a ban never report it, and allowed
// asks never do.
func testNotifyFirst(t *testing.T, newStore func(t *testing.T) clockedStore) {
	for _, alg := range []string{FixedWindow, SlidingWindow, SlidingLog, TokenBucket, LeakyBucket} {
		t.Run(alg, func(t *testing.T) {
			cs := newStore(t)
			a := Ask{Key: cs.prefix + "notify:" + alg, Limit: Limit{Algorithm: alg, Events: 2, Window: time.Second}, Cost: 1, Notify: true}
			if alg == LeakyBucket {
				a.Limit.Burst = 1 // one request now, one waiting its turn
			}
			at := traceBase
			cs.set(at)
			for i := range 2 {
				if r := ask1(t, cs.store, a); !r.Allowed || r.First {
					t.Fatalf("ask %d: %+v, want allowed, not first", i, r)
				}
			}
			if r := ask1(t, cs.store, a); r.Allowed || !r.First || r.Banned {
				t.Fatalf("first refusal: %+v, want refused and first", r)
			}
			for i := range 3 {
				cs.set(at.Add(time.Duration(i+1) * 100 * time.Millisecond))
				if r := ask1(t, cs.store, a); r.Allowed || r.First {
					t.Fatalf("refusal %d within the window: %+v, want refused, not first", i+2, r)
				}
			}
			plain := a
			plain.Notify = false
			plain.Key += ":plain"
			cs.set(at.Add(300 * time.Millisecond))
			burst(t, cs.store, plain, 2)
			if r := ask1(t, cs.store, plain); r.Allowed || r.First {
				t.Fatalf("refusal without Notify: %+v, want no First", r)
			}
			// A window after the first refusal, the key's next refusal
			// is news again (whatever the algorithm's own window).
			cs.set(at.Add(time.Second))
			for {
				r := ask1(t, cs.store, a)
				if !r.Allowed {
					if !r.First {
						t.Fatalf("first refusal a window later: %+v, want first", r)
					}
					break
				}
			}
		})
	}
}

// testNotifyBan: a zone with a ban reports First without Notify; the
// refusal that sets the ban is not first when an earlier one was, and
// refusals by the ban in force never are.
func testNotifyBan(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	a := Ask{Key: cs.prefix + "notify:ban", Limit: Limit{Algorithm: FixedWindow, Events: 1, Window: time.Second}, Cost: 1,
		Ban: Ban{Duration: 10 * time.Second, After: 2}}
	cs.set(traceBase)
	ask1(t, cs.store, a)
	if r := ask1(t, cs.store, a); r.Allowed || !r.First || r.Banned {
		t.Fatalf("first refusal: %+v, want first, no ban yet", r)
	}
	if r := ask1(t, cs.store, a); !r.BanSet || r.First {
		t.Fatalf("second refusal: %+v, want the ban set, not first", r)
	}
	cs.set(traceBase.Add(5 * time.Second))
	if r := ask1(t, cs.store, a); !r.Banned || r.BanSet || r.First {
		t.Fatalf("refused by the ban: %+v, want banned, not first", r)
	}
}

// testNotifyConcurrent: of many concurrent refusals of one key, exactly
// one is first.
func testNotifyConcurrent(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	a := Ask{Key: cs.prefix + "notify:concurrent", Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: time.Hour}, Cost: 1, Notify: true}
	var firsts, refused atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			res, err := cs.store.Decide(context.Background(), []Ask{a})
			if err != nil {
				t.Error(err)
				return
			}
			if !res[0].Allowed {
				refused.Add(1)
			}
			if res[0].First {
				firsts.Add(1)
			}
		})
	}
	wg.Wait()
	if refused.Load() != 190 || firsts.Load() != 1 {
		t.Fatalf("%d refused, %d first; want 190 refused, 1 first", refused.Load(), firsts.Load())
	}
}

// testNotifyAbsorb: an approximate zone's absorb reports the first call
// that finds its key exhausted in a window.
func testNotifyAbsorb(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	s := cs.store.(*RedisStore)
	a := Ask{Key: cs.prefix + "notify:absorb", Limit: Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}, Notify: true}
	var got []bool
	for _, cost := range []int64{4, 9, 1, 0} {
		a.Cost = cost
		res, err := s.Absorb(context.Background(), []Ask{a})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res[0].First)
	}
	if got[0] || !got[1] || got[2] || got[3] {
		t.Fatalf("first per absorb: %v, want only the second (the one that exhausted the key)", got)
	}
}

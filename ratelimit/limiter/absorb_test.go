package limiter

import (
	"context"
	"testing"
	"time"
)

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

func TestApproxAbsorbScript(t *testing.T)         { testAbsorb(t, newMiniredisClocked) }
func TestApproxAbsorbRedis(t *testing.T)          { testAbsorb(t, realRedis) }
func TestApproxAbsorbCluster(t *testing.T)        { testAbsorb(t, realCluster(false)) }
func TestApproxAbsorbClusterOneSlot(t *testing.T) { testAbsorb(t, realCluster(true)) }

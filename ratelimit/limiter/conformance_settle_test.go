package limiter

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The conformance checks of settlements (cost_after), on every store.
func init() {
	conformanceChecks = append(conformanceChecks,
		conformanceCheck{"settle debt and refund", testSettle, false, false},
		conformanceCheck{"settle refund stays in its window", testSettleWindow, true, false},
		conformanceCheck{"settle with leases", testSettleLeases, false, false},
	)
}

// settle1 settles one request admitted at at, failing the test on error.
func settle1(t *testing.T, s Store, at time.Time, settles []Settlement, leases []Lease) {
	t.Helper()
	if _, err := s.(Settler).Settle(context.Background(), at, settles, leases); err != nil {
		t.Fatalf("Settle(%+v, %+v): %v", settles, leases, err)
	}
}

// testSettle: a request admitted at cost 1 that really cost 30 leaves the
// key 20 units in debt, refused until repaid; one that cost less than its
// pre-charge gets the difference back; what cannot settle is refused.
func testSettle(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	for _, alg := range []string{TokenBucket, SlidingWindow, FixedWindow} {
		t.Run(alg, func(t *testing.T) {
			l := Limit{Algorithm: alg, Events: 10, Window: time.Hour}
			a := Ask{Key: cs.prefix + "settle:" + alg, Limit: l, Cost: 1}
			r := ask1(t, cs.store, a)
			if !r.Allowed || r.Remaining != 9 {
				t.Fatalf("admitted at cost 1: %+v, want 9 left", r)
			}
			settle1(t, cs.store, r.Now, []Settlement{{Key: a.Key, Limit: l, Delta: 29}}, nil)
			check := ask1(t, cs.store, Ask{Key: a.Key, Limit: l})
			if check.Allowed || check.Left != -20 || check.Remaining != 0 {
				t.Fatalf("after a real cost of 30: %+v, want refused, 20 units in debt", check)
			}
			if alg == TokenBucket && check.RetryAfter < 21*time.Hour/10-time.Second {
				t.Errorf("retry after %v, want about %v (21 tokens to refill)", check.RetryAfter, 21*time.Hour/10)
			}
			if r := ask1(t, cs.store, a); r.Allowed {
				t.Fatalf("a request in debt: %+v, want refused", r)
			}

			b := Ask{Key: cs.prefix + "refund:" + alg, Limit: l, Cost: 5}
			r = ask1(t, cs.store, b)
			settle1(t, cs.store, r.Now, []Settlement{{Key: b.Key, Limit: l, Delta: -3}}, nil)
			if check := ask1(t, cs.store, Ask{Key: b.Key, Limit: l}); check.Remaining != 8 {
				t.Errorf("pre-charged 5, really 2: %+v, want 8 left", check)
			}
			// A refund never lifts a bucket past its capacity, a window
			// below 0.
			settle1(t, cs.store, r.Now, []Settlement{{Key: b.Key, Limit: l, Delta: -50}}, nil)
			if check := ask1(t, cs.store, Ask{Key: b.Key, Limit: l}); check.Remaining != 10 {
				t.Errorf("refunded past the pre-charge: %+v, want 10 left", check)
			}
		})
	}
	ctx := context.Background()
	for _, bad := range []Settlement{
		{Key: cs.prefix + "bad", Limit: Limit{Algorithm: LeakyBucket, Events: 1, Window: time.Second}, Delta: 1},
		{Key: cs.prefix + "bad", Limit: Limit{Algorithm: SlidingLog, Events: 1, Window: time.Second}, Delta: 1},
		{Key: cs.prefix + "bad", Limit: Limit{Algorithm: FixedWindow, Events: 1, Window: time.Second}, Delta: MaxEvents + 1},
		{Key: cs.prefix + "bad", Limit: Limit{Algorithm: FixedWindow, Events: 1, Window: time.Second}, Delta: -MaxEvents - 1},
	} {
		if _, err := cs.store.(Settler).Settle(ctx, time.Now(), []Settlement{bad}, nil); !errors.Is(err, ErrInvalidAsk) {
			t.Errorf("Settle(%+v) = %v, want ErrInvalidAsk", bad, err)
		}
	}
}

// testSettleWindow: a refund reaches only the window the request was
// charged in; a charge lands in the current one.
func testSettleWindow(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	for _, alg := range []string{SlidingWindow, FixedWindow} {
		t.Run(alg, func(t *testing.T) {
			l := Limit{Algorithm: alg, Events: 10, Window: time.Second}
			a := Ask{Key: cs.prefix + "window:" + alg, Limit: l, Cost: 5}
			cs.set(traceBase.Add(500 * time.Millisecond))
			r := ask1(t, cs.store, a)
			cs.set(traceBase.Add(2500 * time.Millisecond)) // two windows on: forgotten
			a.Cost = 3
			ask1(t, cs.store, a)
			settle1(t, cs.store, r.Now, []Settlement{{Key: a.Key, Limit: l, Delta: -5}}, nil)
			if check := ask1(t, cs.store, Ask{Key: a.Key, Limit: l}); check.Remaining != 7 {
				t.Errorf("refund of an earlier window: %+v, want 7 left (untouched)", check)
			}
		})
	}
}

// testSettleLeases: the leases given back with a settlement free their
// slots.
func testSettleLeases(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	key := cs.prefix + "settle-lease"
	la := leaseAsk(key, 1, time.Minute, "lease-1")
	r := ask1(t, cs.store, la)
	if !r.Allowed {
		t.Fatalf("first lease: %+v", r)
	}
	if r := ask1(t, cs.store, leaseAsk(key, 1, time.Minute, "lease-2")); r.Allowed {
		t.Fatalf("second lease of 1: %+v, want refused", r)
	}
	l := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	tb := cs.prefix + "settle-lease-tokens"
	settle1(t, cs.store, r.Now, []Settlement{{Key: tb, Limit: l, Delta: 4}}, []Lease{{Key: key, ID: "lease-1", TTL: time.Minute}})
	if r := ask1(t, cs.store, leaseAsk(key, 1, time.Minute, "lease-2")); !r.Allowed {
		t.Errorf("a lease after its slot was given back with a settlement: %+v, want allowed", r)
	}
	if check := ask1(t, cs.store, Ask{Key: tb, Limit: l}); check.Remaining != 6 {
		t.Errorf("settled 4 with the lease: %+v, want 6 left", check)
	}
}

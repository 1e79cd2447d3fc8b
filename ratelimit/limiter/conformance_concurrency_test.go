package limiter

import (
	"context"
	"testing"
	"time"
)

// The conformance checks of concurrency leases, on every store.
func init() {
	conformanceChecks = append(conformanceChecks,
		conformanceCheck{"concurrency leases", testConcurrencyLeases, false, false},
		conformanceCheck{"concurrency all or nothing", testConcurrencyAllOrNothing, false, false},
		conformanceCheck{"concurrency lease expiry", testConcurrencyExpiry, true, false},
	)
}

// leaseAsk is a concurrency ask of key taking lease id (cost 1; "" checks).
func leaseAsk(key string, events int64, ttl time.Duration, id string) Ask {
	a := Ask{Key: key, Limit: Limit{Algorithm: Concurrency, Events: events, Window: ttl}, Lease: id}
	if id != "" {
		a.Cost = 1
	}
	return a
}

// testConcurrencyLeases: events 2 admit two leases, refuse a third until
// one is given back; a check takes nothing; refresh reports what is held.
func testConcurrencyLeases(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	cs.set(traceBase)
	ctx := context.Background()
	key := cs.prefix + "conc:k"
	ls := cs.store.(Leaser)
	for i, want := range []int64{1, 0} {
		if r := ask1(t, cs.store, leaseAsk(key, 2, time.Minute, []string{"a", "b"}[i])); !r.Allowed || r.Remaining != want {
			t.Fatalf("lease %d: %+v, want allowed with %d free", i+1, r, want)
		}
	}
	if r := ask1(t, cs.store, leaseAsk(key, 2, time.Minute, "c")); r.Allowed || r.Remaining != 0 || r.RetryAfter != time.Second {
		t.Fatalf("third lease: %+v, want refused, 0 free, retry 1s", r)
	}
	if r := ask1(t, cs.store, leaseAsk(key, 2, time.Minute, "")); r.Allowed {
		t.Fatalf("check with no slot free: %+v, want refused", r)
	}
	if err := ls.Release(ctx, []Lease{{Key: key, ID: "a"}, {Key: key, ID: "never"}}); err != nil {
		t.Fatal(err)
	}
	if r := ask1(t, cs.store, leaseAsk(key, 2, time.Minute, "")); !r.Allowed || r.Remaining != 1 {
		t.Fatalf("check after a release: %+v, want allowed with 1 free", r)
	}
	alive, err := ls.Refresh(ctx, []Lease{{Key: key, ID: "a", TTL: time.Minute}, {Key: key, ID: "b", TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if alive[0] || !alive[1] {
		t.Errorf("refresh of released a and held b = %v, want [false true]", alive)
	}
	if r := ask1(t, cs.store, leaseAsk(key, 2, time.Minute, "c")); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("lease c after a's release: %+v, want allowed with 0 free", r)
	}
	if r := ask1(t, cs.store, leaseAsk(key, 1, time.Minute, "d")); r.Allowed || r.Remaining != 0 {
		t.Fatalf("events lowered to 1 under 2 leases: %+v, want refused with 0 free", r)
	}
}

// testConcurrencyAllOrNothing: a lease is not taken when another zone of
// the request refuses (on Cluster across slots: taken, then given back).
func testConcurrencyAllOrNothing(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	cs.set(traceBase)
	conc := leaseAsk(cs.prefix+"conc-a:k", 1, time.Minute, "x")
	full := Ask{Key: cs.prefix + "bucket-b:k", Limit: Limit{Algorithm: TokenBucket, Events: 1, Window: time.Hour}, Cost: 1}
	if !ask1(t, cs.store, full).Allowed {
		t.Fatal("first ask on the bucket refused")
	}
	res, err := cs.store.Decide(context.Background(), []Ask{conc, full})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Allowed || res[1].Allowed {
		t.Fatalf("results %+v, want the lease allowed, the bucket refused", res)
	}
	if r := ask1(t, cs.store, leaseAsk(conc.Key, 1, time.Minute, "y")); !r.Allowed {
		t.Fatalf("lease after a refused request: %+v, want allowed (nothing taken)", r)
	}
}

// testConcurrencyExpiry: a lease not refreshed frees its slot TTL after it
// was taken; a refresh extends it by TTL from then.
func testConcurrencyExpiry(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	ls := cs.store.(Leaser)
	ctx := context.Background()
	key := cs.prefix + "conc-exp:k"
	cs.set(traceBase)
	if !ask1(t, cs.store, leaseAsk(key, 1, time.Second, "a")).Allowed {
		t.Fatal("first lease refused")
	}
	cs.set(traceBase.Add(999 * time.Millisecond))
	if ask1(t, cs.store, leaseAsk(key, 1, time.Second, "b")).Allowed {
		t.Fatal("lease b allowed while a is held")
	}
	cs.set(traceBase.Add(time.Second))
	if !ask1(t, cs.store, leaseAsk(key, 1, time.Second, "b")).Allowed {
		t.Fatal("lease b refused after a expired")
	}
	cs.set(traceBase.Add(1500 * time.Millisecond))
	if alive, err := ls.Refresh(ctx, []Lease{{Key: key, ID: "b", TTL: time.Second}}); err != nil || !alive[0] {
		t.Fatalf("refresh of b = %v, %v; want held", alive, err)
	}
	cs.set(traceBase.Add(2400 * time.Millisecond)) // b taken at 1s, refreshed at 1.5s
	if ask1(t, cs.store, leaseAsk(key, 1, time.Second, "c")).Allowed {
		t.Fatal("lease c allowed while the refreshed b is held")
	}
	cs.set(traceBase.Add(2500 * time.Millisecond))
	if alive, err := ls.Refresh(ctx, []Lease{{Key: key, ID: "b", TTL: time.Second}}); err != nil || alive[0] {
		t.Fatalf("refresh of expired b = %v, %v; want gone", alive, err)
	}
	if !ask1(t, cs.store, leaseAsk(key, 1, time.Second, "c")).Allowed {
		t.Fatal("lease c refused after b expired")
	}
}

package limiter

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConcurrencyBounds: a concurrency ask out of bounds is an
// ErrInvalidAsk on every store, never a decision.
func TestConcurrencyBounds(t *testing.T) {
	l := Limit{Algorithm: Concurrency, Events: 2, Window: time.Minute}
	for _, tc := range []struct {
		name string
		ask  Ask
	}{
		{"cost 2", Ask{Key: "p:z:k", Limit: l, Cost: 2, Lease: "a"}},
		{"no lease", Ask{Key: "p:z:k", Limit: l, Cost: 1}},
		{"lease id too long", Ask{Key: "p:z:k", Limit: l, Cost: 1, Lease: strings.Repeat("x", MaxLeaseIDLen+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewMemoryStore(nil, 0).Decide(context.Background(), []Ask{tc.ask}); !errors.Is(err, ErrInvalidAsk) {
				t.Errorf("Decide(%+v) error = %v, want ErrInvalidAsk", tc.ask, err)
			}
		})
	}
	for _, ttl := range []time.Duration{999 * time.Millisecond, 25 * time.Hour} {
		if err := CheckLimit(Limit{Algorithm: Concurrency, Events: 1, Window: ttl}); err == nil {
			t.Errorf("CheckLimit(lease_ttl %s) = nil, want an error", ttl)
		}
	}
	if err := CheckLimit(Limit{Algorithm: Concurrency, Events: 1, Window: time.Minute}); err != nil {
		t.Errorf("CheckLimit(lease_ttl 1m) = %v", err)
	}
}

func TestNewLeaseIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := NewLeaseID()
		if seen[id] || len(id) > MaxLeaseIDLen {
			t.Fatalf("lease id %q repeated or longer than %d", id, MaxLeaseIDLen)
		}
		seen[id] = true
	}
}

// FuzzConcurrencyLeases drives the memory store with takes, releases,
// refreshes and clock steps, and checks every answer against a model (a
// map of lease ids to expiries): a lease is admitted exactly when fewer
// than events unexpired leases are held, so never more than events are.
func FuzzConcurrencyLeases(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 4, 8, 12, 1, 3, 0, 0, 0, 0, 2, 6})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const events, ttl = 3, time.Second
		clock := newTestClock(traceBase)
		s := NewMemoryStore(clock.Now, 0)
		ctx := context.Background()
		model := map[string]time.Time{} // id -> expiry
		now := traceBase
		for i, op := range ops {
			id := string(rune('a' + op>>2%8))
			l := Lease{Key: "p:z:k", ID: id, TTL: ttl}
			live := 0
			for _, exp := range model {
				if exp.After(now) {
					live++
				}
			}
			switch op % 4 {
			case 0: // take
				r := ask1(t, s, Ask{Key: l.Key, Limit: Limit{Algorithm: Concurrency, Events: events, Window: ttl}, Cost: 1, Lease: id})
				want := live < events // the same id again is counted once, but asks a slot
				if r.Allowed != want {
					t.Fatalf("op %d: take %s with %d live: allowed %v, want %v", i, id, live, r.Allowed, want)
				}
				if r.Allowed {
					model[id] = now.Add(ttl)
				}
				if r.Remaining != max(events-int64(live)-1, 0) && r.Allowed {
					t.Fatalf("op %d: take %s with %d live: %d free, want %d", i, id, live, r.Remaining, events-live-1)
				}
			case 1: // release
				if err := s.Release(ctx, []Lease{l}); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			case 2: // refresh
				alive, err := s.Refresh(ctx, []Lease{l})
				if err != nil {
					t.Fatal(err)
				}
				exp, ok := model[id]
				want := ok && exp.After(now)
				if alive[0] != want {
					t.Fatalf("op %d: refresh %s = %v, want %v", i, id, alive[0], want)
				}
				if want {
					model[id] = now.Add(ttl)
				}
			case 3: // time passes
				now = now.Add(time.Duration(op>>2) * 50 * time.Millisecond)
				clock.Set(now)
			}
		}
	})
}

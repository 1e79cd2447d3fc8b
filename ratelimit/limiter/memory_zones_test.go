package limiter

import (
	"context"
	"testing"
	"time"
)

// Two handlers sharing the zones' stores (the old and the new config while
// a reload drains), deciding the zones in opposite orders, concurrently:
// no deadlock, and every decision stays all or nothing with the exact
// quota.
func TestZoneMemorySharedParts(t *testing.T) {
	a, b := NewMemoryStore(nil, 0), NewMemoryStore(nil, 0)
	views := make([]Store, 2)
	for i := range views {
		m := NewZoneMemory(time.Now, "rl")
		m.zones["a"], m.zones["b"] = a, b
		views[i] = m
	}
	tight := Limit{Algorithm: TokenBucket, Events: 50, Window: time.Hour}
	loose := Limit{Algorithm: TokenBucket, Events: 1000, Window: time.Hour}
	ka := Ask{Key: StoreKey("rl", "a", "", "k"), Limit: tight, Cost: 1}
	kb := Ask{Key: StoreKey("rl", "b", "", "k"), Limit: loose, Cost: 1}
	results := concurrentResults(t, views, [][]Ask{{ka, kb}, {kb, ka}}, 400)
	checkExactQuota(t, "400 decisions on shared zones", results, tight)
	// b was charged only with a (all or nothing).
	res, err := views[0].Decide(context.Background(), []Ask{{Key: kb.Key, Limit: loose}})
	if err != nil {
		t.Fatal(err)
	}
	if used := loose.Events - res[0].Remaining; used != tight.Events {
		t.Errorf("zone b charged %d times, want %d (only with zone a)", used, tight.Events)
	}
}

// A key naming no zone of the handler is an error, never a decision.
func TestZoneMemoryUnknownZone(t *testing.T) {
	m := NewZoneMemory(time.Now, "rl")
	m.zones["a"] = NewMemoryStore(nil, 0)
	l := Limit{Algorithm: TokenBucket, Events: 1, Window: time.Hour}
	for _, key := range []string{StoreKey("rl", "b", "", "k"), StoreKey("other", "a", "", "k"), "rl:a"} {
		if _, err := m.Decide(context.Background(), []Ask{{Key: key, Limit: l, Cost: 1}}); err == nil {
			t.Errorf("Decide(%q) = nil error, want an error", key)
		}
	}
}

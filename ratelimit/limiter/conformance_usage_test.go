package limiter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The conformance checks of usage per key (Ask.Usage), on every store.
func init() {
	conformanceChecks = append(conformanceChecks,
		conformanceCheck{"usage per key and period", testUsage, false, false},
		conformanceCheck{"usage kept", testUsageKept, true, false},
		conformanceCheck{"usage refused", testUsageInvalid, false, false},
	)
}

// usageOf lists the usage of zone at start, failing the test on error.
func usageOf(t *testing.T, s Store, prefix, zone string, start time.Time) []UsageRow {
	t.Helper()
	rows, err := s.(UsageReader).Usage(context.Background(), prefix, zone, start)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// testUsage: charges, refusals, settlements and refunds add up per key;
// only allowed requests' units count; a hostile key is kept as a digest.
func testUsage(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	prefix := cs.prefix + "u"
	l := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	long := strings.Repeat("x", MaxUsageKeyLen+1)
	ask := func(key string, cost int64) Result {
		t.Helper()
		return ask1(t, cs.store, Ask{Key: StoreKey(prefix, "metered", "", key), Limit: l, Cost: cost, Usage: Usage{Key: key, Keep: time.Hour}})
	}
	var r Result
	for _, cost := range []int64{3, 4, 5, 0, 3} { // 3, 4 and 3 let through; 5 refused; 0 checks
		r = ask("alice", cost)
	}
	ask("bob", 2)
	ask(long, 1)
	ask("\xff", 1)
	a := StoreKey(prefix, "metered", "", "alice")
	settle1(t, cs.store, r.Now, []Settlement{{Key: a, Limit: l, Delta: 2, Usage: Usage{Key: "alice", Keep: time.Hour}}}, nil)
	settle1(t, cs.store, r.Now, []Settlement{{Key: a, Limit: l, Delta: -1, Usage: Usage{Key: "alice", Keep: time.Hour}}}, nil)
	start := r.Now.Truncate(time.Hour)
	got := fmt.Sprint(usageOf(t, cs.store, prefix, "metered", start))
	rows := []UsageRow{
		{Key: "alice", StoreKey: a, Start: start, Units: 11, Refused: 1},
		{Key: "bob", StoreKey: StoreKey(prefix, "metered", "", "bob"), Start: start, Units: 2},
		{Key: UsageKeyText("\xff"), StoreKey: StoreKey(prefix, "metered", "", "\xff"), Start: start, Units: 1},
		{Key: UsageKeyText(long), StoreKey: StoreKey(prefix, "metered", "", long), Start: start, Units: 1},
	}
	sortUsage(rows)
	if want := fmt.Sprint(rows); got != want {
		t.Fatalf("usage\n%s\nwant\n%s", got, want)
	}
	if rows := usageOf(t, cs.store, prefix, "metered", start.Add(-time.Hour)); len(rows) != 0 {
		t.Errorf("the previous hour: %v, want none", rows)
	}
	if rows := usageOf(t, cs.store, prefix, "other", start); len(rows) != 0 {
		t.Errorf("another zone: %v, want none", rows)
	}
}

// testUsageKept: a period's usage is there for Keep, then dropped at a
// later period's first charge.
func testUsageKept(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	prefix := cs.prefix + "k"
	l := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	a := Ask{Key: StoreKey(prefix, "metered", "", "carol"), Limit: l, Cost: 1, Usage: Usage{Key: "carol", Keep: 2 * time.Hour}}
	for h := range 4 {
		cs.set(traceBase.Add(time.Duration(h) * time.Hour))
		ask1(t, cs.store, a)
	}
	for h, want := range []int{0, 1, 1, 1} { // hour 0 began more than 2h before hour 3
		if rows := usageOf(t, cs.store, prefix, "metered", traceBase.Add(time.Duration(h)*time.Hour)); len(rows) != want {
			t.Errorf("hour %d: %v, want %d row", h, rows, want)
		}
	}
}

// testUsageInvalid: usage on another algorithm, or kept out of bounds, is
// an ErrInvalidAsk.
func testUsageInvalid(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	for _, a := range []Ask{
		{Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: time.Hour}, Usage: Usage{Key: "k", Keep: time.Hour}},
		{Limit: Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}, Usage: Usage{Key: "k", Keep: -time.Hour}},
		{Limit: Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}, Usage: Usage{Key: "k", Keep: MaxWindow + time.Hour}},
	} {
		a.Key, a.Cost = cs.prefix+"usage:bad", 1
		if _, err := cs.store.Decide(context.Background(), []Ask{a}); !errors.Is(err, ErrInvalidAsk) {
			t.Errorf("Decide(usage %+v on %s) = %v, want ErrInvalidAsk", a.Usage, a.Limit.Algorithm, err)
		}
	}
}

package limiter

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The conformance checks of thresholds (Ask.Thresholds), on every store.
func init() {
	conformanceChecks = append(conformanceChecks,
		conformanceCheck{"thresholds once per period", testThresholdsOnce, true, false},
		conformanceCheck{"thresholds on a calendar period", testThresholdsCalendar, true, false},
		conformanceCheck{"thresholds not told by a refused decision", testThresholdsAllOrNothing, false, false},
		conformanceCheck{"thresholds concurrent", testThresholdsConcurrent, false, false},
		conformanceCheck{"thresholds refused", testThresholdsInvalid, false, false},
	)
}

// testThresholdsOnce: charges and settlements tell each mark once in a
// period, whatever refunds do meanwhile; the next period tells again.
func testThresholdsOnce(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	cs.set(traceBase)
	l := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	a := Ask{Key: cs.prefix + "thresholds:once", Limit: l, Thresholds: []int64{8, 10}}
	charge := func(cost int64) Result {
		t.Helper()
		a.Cost = cost
		return ask1(t, cs.store, a)
	}
	steps := []struct {
		cost    int64
		crossed uint8
	}{{3, 0}, {0, 0}, {5, 1}, {1, 0}, {1, 2}, {1, 0}}
	var last Result
	for i, s := range steps {
		last = charge(s.cost)
		if last.Crossed != s.crossed {
			t.Fatalf("step %d (cost %d): %+v, want crossed %b", i, s.cost, last, s.crossed)
		}
	}
	// A refund below both marks, then charges past them: told already.
	settle1(t, cs.store, last.Now, []Settlement{{Key: a.Key, Limit: l, Delta: -6, Thresholds: a.Thresholds}}, nil)
	if r := charge(3); !r.Allowed || r.Crossed != 0 || r.Remaining != 3 {
		t.Fatalf("after a refund of 6, cost 3: %+v, want allowed, 3 left, nothing told", r)
	}
	if rs, err := cs.store.(Settler).Settle(context.Background(), last.Now, []Settlement{{Key: a.Key, Limit: l, Delta: 5, Thresholds: a.Thresholds}}, nil); err != nil || rs != nil {
		t.Fatalf("settling 5 more past told marks: %v %v, want nothing told", rs, err)
	}
	// The next period tells again, a settlement too, with its count.
	cs.set(traceBase.Add(time.Hour))
	if r := charge(7); r.Crossed != 0 {
		t.Fatalf("next period, cost 7: %+v, want nothing told", r)
	}
	rs, err := cs.store.(Settler).Settle(context.Background(), last.Now, []Settlement{{Key: a.Key, Limit: l, Delta: 4, Thresholds: a.Thresholds}}, nil)
	if err != nil || len(rs) != 1 || rs[0] != (SettleResult{Crossed: 3, Used: 11}) {
		t.Fatalf("next period, settling 4 after 7: %+v %v, want both marks told at 11", rs, err)
	}
}

// testThresholdsCalendar: a calendar period tells its marks again when
// the next local day begins.
func testThresholdsCalendar(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2027, 3, 27, 23, 59, 0, 0, berlin) // the night before a 23-hour day
	cur := day
	if rs, ok := cs.store.(*RedisStore); ok { // boundaries around the test's clock
		rs.clock = func() time.Time { return cur }
	}
	cs.set(day)
	l := Limit{Algorithm: FixedWindow, Events: 4, Window: 24 * time.Hour, Calendar: Calendar{Unit: CalendarDay, Loc: berlin}}
	a := Ask{Key: cs.prefix + "thresholds:calendar", Limit: l, Cost: 2, Thresholds: []int64{2}}
	if r := ask1(t, cs.store, a); r.Crossed != 1 {
		t.Fatalf("first charge: %+v, want the mark told", r)
	}
	cur = day.Add(2 * time.Minute) // 00:01 local: a new day
	cs.set(cur)
	if r := ask1(t, cs.store, a); r.Crossed != 1 || r.Remaining != 2 {
		t.Fatalf("the next local day: %+v, want the mark told again, 2 left", r)
	}
}

// testThresholdsAllOrNothing: an ask allowed within a refused decision
// charges nothing and tells nothing; told when the decision passes.
func testThresholdsAllOrNothing(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	marked := Ask{Key: cs.prefix + "{thr}aon:marked", Limit: Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}, Cost: 5, Thresholds: []int64{5}}
	tight := Ask{Key: cs.prefix + "{thr}aon:tight", Limit: Limit{Algorithm: FixedWindow, Events: 1, Window: time.Hour}, Cost: 1}
	ask1(t, cs.store, tight)
	res, err := cs.store.Decide(context.Background(), []Ask{marked, tight})
	if err != nil || res[0].Crossed != 0 || res[1].Allowed {
		t.Fatalf("refused decision: %+v %v, want nothing told", res, err)
	}
	if r := ask1(t, cs.store, marked); r.Crossed != 1 || r.Remaining != 5 {
		t.Fatalf("alone: %+v, want the mark told, 5 left", r)
	}
}

// testThresholdsConcurrent: 300 requests racing past two marks tell each
// exactly once.
func testThresholdsConcurrent(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	a := Ask{Key: cs.prefix + "thresholds:concurrent", Limit: Limit{Algorithm: FixedWindow, Events: 200, Window: time.Hour}, Cost: 1, Thresholds: []int64{160, 200}}
	var told [2]atomic.Int64
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 300 {
		wg.Go(func() {
			res, err := cs.store.Decide(context.Background(), []Ask{a})
			if err != nil {
				t.Error(err)
				return
			}
			if res[0].Allowed {
				allowed.Add(1)
			}
			for i := range told {
				if res[0].Crossed&(1<<i) != 0 {
					told[i].Add(1)
				}
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 200 || told[0].Load() != 1 || told[1].Load() != 1 {
		t.Fatalf("%d allowed, marks told %d and %d times; want 200 allowed, each once", allowed.Load(), told[0].Load(), told[1].Load())
	}
}

// testThresholdsInvalid: marks out of bounds are an ErrInvalidAsk.
func testThresholdsInvalid(t *testing.T, newStore func(t *testing.T) clockedStore) {
	cs := newStore(t)
	fixed := Limit{Algorithm: FixedWindow, Events: 10, Window: time.Hour}
	for _, a := range []Ask{
		{Limit: Limit{Algorithm: TokenBucket, Events: 10, Window: time.Hour}, Thresholds: []int64{5}},
		{Limit: fixed, Thresholds: []int64{0}},
		{Limit: fixed, Thresholds: []int64{5, 5}},
		{Limit: fixed, Thresholds: []int64{6, 5}},
		{Limit: fixed, Thresholds: []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{Limit: fixed, Thresholds: []int64{MaxEvents + 1}},
	} {
		a.Key, a.Cost = cs.prefix+"thresholds:bad", 1
		if _, err := cs.store.Decide(context.Background(), []Ask{a}); !errors.Is(err, ErrInvalidAsk) {
			t.Errorf("Decide(%v on %s) = %v, want ErrInvalidAsk", a.Thresholds, a.Limit.Algorithm, err)
		}
	}
}

package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// calendarClocked is a store whose clock the test sets, the Redis store's
// own clock (the boundaries it sends) included: memory, or the script on
// miniredis.
func calendarClocked(t *testing.T, kind string, at time.Time) (Store, func(time.Time)) {
	clock := newTestClock(at)
	if kind == "memory" {
		return NewMemoryStore(clock.Now, 0), clock.Set
	}
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { c.Close() })
	m.SetTime(at)
	s := NewRedisStore(c)
	s.clock = clock.Now
	cur := at
	return s, func(to time.Time) {
		if d := to.Sub(cur); d > 0 {
			m.FastForward(d)
		}
		cur = to
		m.SetTime(to)
		clock.Set(to)
	}
}

// TestCalendarResetAtBoundary: a calendar quota resets exactly at the
// local boundary (DST days, month ends, a leap day, a year end) on the
// memory store and the Redis script, with Retry-After and Reset the
// period's end.
func TestCalendarResetAtBoundary(t *testing.T) {
	berlin, ny := mustLoc(t, "Europe/Berlin"), mustLoc(t, "America/New_York")
	cases := []struct {
		name string
		c    Calendar
		end  time.Time // the boundary
	}{
		{"berlin 23h day", Calendar{CalendarDay, berlin}, time.Date(2026, 3, 30, 0, 0, 0, 0, berlin)},
		{"berlin 25h day", Calendar{CalendarDay, berlin}, time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)},
		{"new york 23h day", Calendar{CalendarDay, ny}, time.Date(2026, 3, 9, 0, 0, 0, 0, ny)},
		{"new york 25h day", Calendar{CalendarDay, ny}, time.Date(2026, 11, 2, 0, 0, 0, 0, ny)},
		{"berlin repeated hour", Calendar{CalendarHour, berlin}, time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC)},
		{"february 28", Calendar{CalendarMonth, berlin}, time.Date(2026, 3, 1, 0, 0, 0, 0, berlin)},
		{"leap february 29", Calendar{CalendarMonth, ny}, time.Date(2028, 3, 1, 0, 0, 0, 0, ny)},
		{"april 30", Calendar{CalendarMonth, ny}, time.Date(2026, 5, 1, 0, 0, 0, 0, ny)},
		{"october 31", Calendar{CalendarMonth, berlin}, time.Date(2026, 11, 1, 0, 0, 0, 0, berlin)},
		{"year end", Calendar{CalendarDay, berlin}, time.Date(2027, 1, 1, 0, 0, 0, 0, berlin)},
		{"iso week at the year end", Calendar{CalendarWeek, ny}, time.Date(2027, 1, 4, 0, 0, 0, 0, ny)},
	}
	for _, kind := range []string{"memory", "miniredis"} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				start, end := c.c.Period(c.end.Add(-time.Millisecond))
				if !end.Equal(c.end) {
					t.Fatalf("period [%s, %s), want the end %s", start, end, c.end)
				}
				_, next := c.c.Period(end)
				at := start.Add(end.Sub(start) / 2)
				s, set := calendarClocked(t, kind, at)
				a := Ask{Key: "cal:" + c.name, Limit: Limit{Algorithm: FixedWindow, Events: 3, Window: c.c.Unit.Nominal(), Calendar: c.c}, Cost: 1}
				if got := burst(t, s, a, 3); got != 3 {
					t.Fatalf("%d allowed in the period, want 3", got)
				}
				r := ask1(t, s, a)
				if r.Allowed || r.RetryAfter != end.Sub(at) || r.Reset != end.Sub(at) {
					t.Fatalf("4th: allowed %v, retry %s, reset %s; want refused, both %s", r.Allowed, r.RetryAfter, r.Reset, end.Sub(at))
				}
				set(end.Add(-time.Microsecond))
				if r := ask1(t, s, a); r.Allowed || r.RetryAfter != time.Microsecond {
					t.Fatalf("1µs before the boundary: allowed %v, retry %s; want refused, 1µs", r.Allowed, r.RetryAfter)
				}
				set(end)
				r = ask1(t, s, a)
				if !r.Allowed || r.Remaining != 2 || r.Reset != next.Sub(end) {
					t.Fatalf("at the boundary: allowed %v, remaining %d, reset %s; want allowed, 2, %s", r.Allowed, r.Remaining, r.Reset, next.Sub(end))
				}
			})
		}
	}
}

// TestCalendarAllOrNothing: a calendar zone decided with another zone
// that refuses is not charged.
func TestCalendarAllOrNothing(t *testing.T) {
	at := time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)
	for _, kind := range []string{"memory", "miniredis"} {
		t.Run(kind, func(t *testing.T) {
			s, _ := calendarClocked(t, kind, at)
			cal := Ask{Key: "aon:cal", Limit: Limit{Algorithm: FixedWindow, Events: 100, Window: 31 * 24 * time.Hour, Calendar: Calendar{CalendarMonth, time.UTC}}, Cost: 1}
			minute := Ask{Key: "aon:minute", Limit: Limit{Algorithm: FixedWindow, Events: 2, Window: time.Minute}, Cost: 1}
			allowed := 0
			for range 5 {
				res, err := s.Decide(context.Background(), []Ask{minute, cal})
				if err != nil {
					t.Fatal(err)
				}
				if allAllowed(res) {
					allowed++
				}
			}
			if allowed != 2 {
				t.Fatalf("%d allowed, want 2", allowed)
			}
			if r := ask1(t, s, Ask{Key: cal.Key, Limit: cal.Limit}); r.Remaining != 98 {
				t.Errorf("calendar zone: %d remaining, want 98 (refused decisions not charged)", r.Remaining)
			}
		})
	}
}

// TestRedisCalendarBoundaryRealTime: on the real Redis and on a Redis
// Cluster the script picks the period containing Redis TIME among the
// boundaries sent: a boundary a few hundred ms ahead of Redis TIME resets
// the quota when it passes.
func TestRedisCalendarBoundaryRealTime(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		c, prefix := testenv.Redis(t)
		calendarBoundaryRealTime(t, c, prefix)
	})
	t.Run("cluster", func(t *testing.T) {
		c, prefix := testenv.RedisCluster(t)
		calendarBoundaryRealTime(t, c, prefix)
	})
}

func calendarBoundaryRealTime(t *testing.T, c redis.UniversalClient, prefix string) {
	s := NewRedisStore(c)
	ctx := context.Background()
	rt, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	b := rt.Add(400 * time.Millisecond).UnixMicro()
	h := time.Hour.Microseconds()
	a := Ask{Key: StoreKey(prefix, "cal", "", "k"), Limit: Limit{Algorithm: FixedWindow, Events: 2, Window: time.Hour, Calendar: Calendar{CalendarHour, time.UTC}}, Cost: 1}
	p, err := paramsOf(a)
	if err != nil {
		t.Fatal(err)
	}
	p.cal = [4]int64{b - 2*h, b - h, b, b + h}
	decide := func() Result {
		res, _, err := s.decide(ctx, 0, []Ask{a}, []params{p})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	for i := range 2 {
		if r := decide(); !r.Allowed {
			t.Fatalf("ask %d refused", i)
		}
	}
	r := decide()
	wait := time.UnixMicro(b).Sub(r.Now)
	if r.Allowed || r.RetryAfter != wait || r.Reset != wait || wait <= 0 {
		t.Fatalf("3rd: allowed %v, retry %s, reset %s; want refused, both %s", r.Allowed, r.RetryAfter, r.Reset, wait)
	}
	if ttl := c.PTTL(ctx, a.Key).Val(); ttl <= 0 || ttl > wait+3*time.Millisecond {
		t.Errorf("key TTL %s, want about %s (the period's end)", ttl, wait)
	}
	time.Sleep(wait + 20*time.Millisecond)
	r = decide()
	if !r.Allowed || r.Remaining != 1 || r.Reset != time.UnixMicro(b+h).Sub(r.Now) {
		t.Fatalf("after the boundary: allowed %v, remaining %d, reset %s", r.Allowed, r.Remaining, r.Reset)
	}
	if !r.Now.After(time.UnixMicro(b)) && !r.Now.Equal(time.UnixMicro(b)) {
		t.Fatalf("Redis TIME %s before the boundary", r.Now)
	}
}

// TestRedisCalendarConcurrentExact: three store clients on one Redis
// (three instances), a monthly quota of 1,000 beside a per-minute zone,
// 600 concurrent requests of one key across them, twice: exactly 1,000
// allowed of 1,200.
func TestRedisCalendarConcurrentExact(t *testing.T) {
	run := func(t *testing.T, stores []Store, prefix string) {
		month := Ask{Key: StoreKey(prefix, "month", "", "customer-1"), Limit: Limit{Algorithm: FixedWindow, Events: 1000, Window: CalendarMonth.Nominal(), Calendar: Calendar{CalendarMonth, mustLoc(t, "Europe/Berlin")}}, Cost: 1}
		minute := Ask{Key: StoreKey(prefix, "minute", "", "customer-1"), Limit: Limit{Algorithm: TokenBucket, Events: 100000, Window: 8760 * time.Hour}, Cost: 1}
		allowed := 0
		for range 2 {
			for _, res := range concurrentResults(t, stores, [][]Ask{{minute, month}}, 600) {
				if allAllowed(res) {
					allowed++
				}
			}
		}
		if allowed != 1000 {
			t.Fatalf("%d allowed of 1200, want exactly 1000", allowed)
		}
		if r := ask1(t, stores[0], Ask{Key: minute.Key, Limit: minute.Limit}); r.Remaining < 100000-1000-1 || r.Remaining > 100000-1000 {
			t.Errorf("minute zone: %d remaining, want about %d (refused decisions not charged)", r.Remaining, 100000-1000)
		}
	}
	t.Run("redis", func(t *testing.T) {
		c, prefix := testenv.Redis(t)
		stores := []Store{NewRedisStore(c)}
		for range 2 {
			other, _ := testenv.Redis(t)
			stores = append(stores, NewRedisStore(other))
		}
		run(t, stores, prefix)
	})
	t.Run("cluster", func(t *testing.T) {
		c, prefix := testenv.RedisCluster(t)
		addrs := testenv.RedisClusterAddrs(t)
		stores := []Store{NewRedisStore(c)}
		for range 2 {
			other := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			t.Cleanup(func() { other.Close() })
			stores = append(stores, NewRedisStore(other))
		}
		run(t, stores, prefix+":{tag}")
	})
	t.Run("memory", func(t *testing.T) {
		run(t, []Store{NewMemoryStore(nil, 0)}, "mem")
	})
}

// TestCalendarScriptArgs: a calendar ask sends its boundaries in place of
// the burst; other asks send exactly what they did.
func TestCalendarScriptArgs(t *testing.T) {
	p, _ := paramsOf(Ask{Key: "k", Limit: Limit{Algorithm: FixedWindow, Events: 5, Window: time.Minute, Burst: 0}, Cost: 1})
	if v, ok := p.burstArg().(int64); !ok || v != 0 {
		t.Errorf("plain fixed_window burst arg %v (%T), want int64 0", p.burstArg(), p.burstArg())
	}
	p, _ = paramsOf(Ask{Key: "k", Limit: Limit{Algorithm: FixedWindow, Events: 5, Window: 24 * time.Hour, Calendar: Calendar{CalendarDay, nil}}, Cost: 1})
	p.cal = [4]int64{1, 2, 3, 4}
	if v := p.burstArg(); v != "c 1 2 3 4" {
		t.Errorf("calendar burst arg %v", v)
	}
	if _, err := paramsOf(Ask{Key: "k", Limit: Limit{Algorithm: TokenBucket, Events: 5, Window: time.Hour, Calendar: Calendar{CalendarHour, nil}}, Cost: 1}); err == nil {
		t.Error("a calendar token_bucket ask accepted")
	}
}

// TestCalendarSettle: cost_after settlements charge and give back within
// the calendar period the request was admitted in, and the period's end
// still resets the key.
func TestCalendarSettle(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	cal := Calendar{CalendarDay, berlin}
	at := time.Date(2026, 3, 29, 23, 0, 0, 0, berlin)
	for _, kind := range []string{"memory", "miniredis"} {
		t.Run(kind, func(t *testing.T) {
			s, set := calendarClocked(t, kind, at)
			a := Ask{Key: "settle:cal", Limit: Limit{Algorithm: FixedWindow, Events: 100, Window: 24 * time.Hour, Calendar: cal}, Cost: 10}
			if r := ask1(t, s, a); !r.Allowed || r.Remaining != 90 {
				t.Fatalf("admission: %+v", r)
			}
			settle := func(delta int64) {
				if _, err := s.(Settler).Settle(context.Background(), at, []Settlement{{Key: a.Key, Limit: a.Limit, Delta: delta}}, nil); err != nil {
					t.Fatal(err)
				}
			}
			check := func(want int64) {
				t.Helper()
				if r := ask1(t, s, Ask{Key: a.Key, Limit: a.Limit}); r.Remaining != want {
					t.Fatalf("remaining %d, want %d", r.Remaining, want)
				}
			}
			settle(95) // into debt past the quota
			check(0)
			settle(-20)
			check(15)
			_, end := cal.Period(at)
			set(end)
			check(100)
		})
	}
}

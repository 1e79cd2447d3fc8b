package limiter

import (
	"math/rand/v2"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// TestCalendarPeriods checks periods at DST changes, month ends, a leap
// day, a year end and ISO weeks across a year end.
func TestCalendarPeriods(t *testing.T) {
	berlin, ny := mustLoc(t, "Europe/Berlin"), mustLoc(t, "America/New_York")
	cases := []struct {
		name       string
		c          Calendar
		at         time.Time
		start, end time.Time
		length     time.Duration
	}{
		{"berlin spring day", Calendar{CalendarDay, berlin}, time.Date(2026, 3, 29, 12, 0, 0, 0, berlin),
			time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin), 23 * time.Hour},
		{"berlin autumn day", Calendar{CalendarDay, berlin}, time.Date(2026, 10, 25, 12, 0, 0, 0, berlin),
			time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin), 25 * time.Hour},
		{"new york spring day", Calendar{CalendarDay, ny}, time.Date(2026, 3, 8, 23, 59, 59, 0, ny),
			time.Date(2026, 3, 8, 0, 0, 0, 0, ny), time.Date(2026, 3, 9, 0, 0, 0, 0, ny), 23 * time.Hour},
		{"new york autumn day", Calendar{CalendarDay, ny}, time.Date(2026, 11, 1, 0, 0, 0, 0, ny),
			time.Date(2026, 11, 1, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny), 25 * time.Hour},
		{"berlin repeated hour (CEST)", Calendar{CalendarHour, berlin}, time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC), time.Hour},
		{"berlin repeated hour (CET)", Calendar{CalendarHour, berlin}, time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),
			time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), time.Hour},
		{"berlin hour after the gap", Calendar{CalendarHour, berlin}, time.Date(2026, 3, 29, 3, 10, 0, 0, berlin),
			time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 2, 0, 0, 0, time.UTC), time.Hour},
		{"february 28 days", Calendar{CalendarMonth, berlin}, time.Date(2026, 2, 14, 0, 0, 0, 0, berlin),
			time.Date(2026, 2, 1, 0, 0, 0, 0, berlin), time.Date(2026, 3, 1, 0, 0, 0, 0, berlin), 28 * 24 * time.Hour},
		{"leap february 29 days", Calendar{CalendarMonth, time.UTC}, time.Date(2028, 2, 29, 23, 59, 59, 999999999, time.UTC),
			time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC), 29 * 24 * time.Hour},
		{"leap day", Calendar{CalendarDay, ny}, time.Date(2028, 2, 29, 7, 0, 0, 0, ny),
			time.Date(2028, 2, 29, 0, 0, 0, 0, ny), time.Date(2028, 3, 1, 0, 0, 0, 0, ny), 24 * time.Hour},
		{"april 30 days", Calendar{CalendarMonth, ny}, time.Date(2026, 4, 30, 23, 0, 0, 0, ny),
			time.Date(2026, 4, 1, 0, 0, 0, 0, ny), time.Date(2026, 5, 1, 0, 0, 0, 0, ny), 30 * 24 * time.Hour},
		{"march 31 days, 23h day", Calendar{CalendarMonth, berlin}, time.Date(2026, 3, 31, 0, 0, 0, 0, berlin),
			time.Date(2026, 3, 1, 0, 0, 0, 0, berlin), time.Date(2026, 4, 1, 0, 0, 0, 0, berlin), 31*24*time.Hour - time.Hour},
		{"october 31 days, 25h day", Calendar{CalendarMonth, berlin}, time.Date(2026, 10, 1, 0, 0, 0, 0, berlin),
			time.Date(2026, 10, 1, 0, 0, 0, 0, berlin), time.Date(2026, 11, 1, 0, 0, 0, 0, berlin), 31*24*time.Hour + time.Hour},
		{"year end day", Calendar{CalendarDay, berlin}, time.Date(2026, 12, 31, 23, 59, 59, 0, berlin),
			time.Date(2026, 12, 31, 0, 0, 0, 0, berlin), time.Date(2027, 1, 1, 0, 0, 0, 0, berlin), 24 * time.Hour},
		{"year end month", Calendar{CalendarMonth, ny}, time.Date(2026, 12, 31, 12, 0, 0, 0, ny),
			time.Date(2026, 12, 1, 0, 0, 0, 0, ny), time.Date(2027, 1, 1, 0, 0, 0, 0, ny), 31 * 24 * time.Hour},
		// 2026-12-28 is a Monday; ISO week 53 of 2026 runs to 2027-01-03.
		{"iso week across the year end", Calendar{CalendarWeek, berlin}, time.Date(2027, 1, 1, 0, 0, 0, 0, berlin),
			time.Date(2026, 12, 28, 0, 0, 0, 0, berlin), time.Date(2027, 1, 4, 0, 0, 0, 0, berlin), 7 * 24 * time.Hour},
		{"iso week sunday", Calendar{CalendarWeek, time.UTC}, time.Date(2028, 1, 2, 23, 0, 0, 0, time.UTC),
			time.Date(2027, 12, 27, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 3, 0, 0, 0, 0, time.UTC), 7 * 24 * time.Hour},
		{"new york week with the fall back", Calendar{CalendarWeek, ny}, time.Date(2026, 11, 1, 3, 0, 0, 0, ny),
			time.Date(2026, 10, 26, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 0, 0, 0, 0, ny), 7*24*time.Hour + time.Hour},
	}
	for _, c := range cases {
		s, e := c.c.Period(c.at)
		if !s.Equal(c.start) || !e.Equal(c.end) {
			t.Errorf("%s: Period(%s) = [%s, %s), want [%s, %s)", c.name, c.at, s, e, c.start, c.end)
		}
		if e.Sub(s) != c.length {
			t.Errorf("%s: length %s, want %s", c.name, e.Sub(s), c.length)
		}
		// Exactly at the boundary: the instant before is in this period,
		// the boundary itself in the next.
		if ps, pe := c.c.Period(e.Add(-time.Nanosecond)); !ps.Equal(s) || !pe.Equal(e) {
			t.Errorf("%s: 1ns before the end is in [%s, %s)", c.name, ps, pe)
		}
		if ns, _ := c.c.Period(e); !ns.Equal(e) {
			t.Errorf("%s: the next period starts at %s, want %s", c.name, ns, e)
		}
	}
	// The Berlin autumn day has 25 hour periods, the spring day 23.
	for _, d := range []struct {
		day  time.Time
		want int
	}{{time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), 25}, {time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), 23}, {time.Date(2026, 11, 1, 0, 0, 0, 0, ny), 25}} {
		day := Calendar{CalendarDay, d.day.Location()}
		hour := Calendar{CalendarHour, d.day.Location()}
		_, end := day.Period(d.day)
		n := 0
		for at := d.day; at.Before(end); n++ {
			_, at = hour.Period(at)
		}
		if n != d.want {
			t.Errorf("%s: %d hour periods, want %d", d.day, n, d.want)
		}
	}
}

// TestCalendarMidnightGap: where local midnight does not exist (Santiago
// springs from 00:00 to 01:00), the day starts at 01:00.
func TestCalendarMidnightGap(t *testing.T) {
	loc := mustLoc(t, "America/Santiago")
	c := Calendar{CalendarDay, loc}
	// 2026-09-06 00:00 -04 -> 01:00 -03.
	s, e := c.Period(time.Date(2026, 9, 6, 12, 0, 0, 0, loc))
	if want := time.Date(2026, 9, 6, 4, 0, 0, 0, time.UTC); !s.Equal(want) {
		t.Errorf("start %s, want %s (the first instant of the day)", s, want)
	}
	if got := e.Sub(s); got != 23*time.Hour {
		t.Errorf("length %s, want 23h", got)
	}
	if ls := s.In(loc); ls.Day() != 6 || ls.Hour() != 1 {
		t.Errorf("start reads %s locally, want 01:00 on the 6th", ls)
	}
}

// FuzzCalendarPeriod: start <= t < end, the next period starts at end,
// the previous one ends at start, and the boundaries read the unit's
// local start (where it exists).
func FuzzCalendarPeriod(f *testing.F) {
	for _, s := range []int64{0, 1_774_746_000, 1_792_890_000, 1_772_953_200, 1_793_512_800, 1_830_297_600, 1_835_395_200} {
		f.Add(s, uint8(1), uint8(0))
	}
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney", "America/Santiago", "Pacific/Chatham"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = mustLoc(f, z)
	}
	f.Fuzz(func(t *testing.T, sec int64, unit, zone uint8) {
		sec = sec % (200 * 365 * 86400) // around 1970..2170
		if sec < 0 {
			sec = -sec
		}
		c := Calendar{CalendarUnit(unit%4 + 1), locs[int(zone)%len(locs)]}
		at := time.Unix(sec, int64(uint64(sec)*7919%1e9))
		s, e := c.Period(at)
		if at.Before(s) || !at.Before(e) {
			t.Fatalf("%v %s: Period(%s) = [%s, %s): not containing", c.Unit, c.Loc, at, s, e)
		}
		if ns, _ := c.Period(e); !ns.Equal(e) {
			t.Fatalf("%v %s: next period after [%s, %s) starts %s", c.Unit, c.Loc, s, e, ns)
		}
		if _, pe := c.Period(s.Add(-time.Nanosecond)); !pe.Equal(s) {
			t.Fatalf("%v %s: previous period of [%s, %s) ends %s", c.Unit, c.Loc, s, e, pe)
		}
		ls := s.In(c.Loc)
		if c.Unit != CalendarHour && ls.Hour() != 0 && ls.Add(-time.Hour).Day() == ls.Day() {
			t.Fatalf("%v %s: period starts at %s locally, not at the day's first instant", c.Unit, c.Loc, ls)
		}
	})
}

// TestCalendarPeriodRandom runs the fuzz property on random instants.
func TestCalendarPeriodRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, z := range []string{"Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney"} {
		loc := mustLoc(t, z)
		for u := CalendarHour; u <= CalendarMonth; u++ {
			c := Calendar{u, loc}
			for range 2000 {
				at := time.Unix(1_750_000_000+r.Int64N(200_000_000), r.Int64N(1e9))
				s, e := c.Period(at)
				if at.Before(s) || !at.Before(e) {
					t.Fatalf("%v %s: Period(%s) = [%s, %s)", u, z, at, s, e)
				}
				if ns, _ := c.Period(e); !ns.Equal(e) {
					t.Fatalf("%v %s: next after [%s, %s) starts %s", u, z, s, e, ns)
				}
			}
		}
	}
}

func TestPickPeriod(t *testing.T) {
	b := calendarBounds(Calendar{CalendarDay, time.UTC}, time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC).UnixMicro())
	day := int64(86400e6)
	if b[1]-b[0] != day || b[2]-b[1] != day || b[3]-b[2] != day {
		t.Fatalf("bounds %v", b)
	}
	for _, c := range []struct{ at, start int64 }{{b[1] - 1, b[0]}, {b[1], b[1]}, {b[2] - 1, b[1]}, {b[2], b[2]}, {b[3] - 1, b[2]}, {b[3] + 5*day, b[2]}} {
		if s, e := pickPeriod(b, c.at); s != c.start || e <= c.at {
			t.Errorf("pickPeriod(%d) = [%d, %d), want start %d and an end after it", c.at, s, e, c.start)
		}
	}
	// A store clock days past every boundary (this host's clock behind)
	// still counts: the period ends a day from its now, not in its past.
	if _, e := pickPeriod(b, b[3]+5*day); e != b[3]+6*day {
		t.Errorf("past the boundaries: end %d, want %d", e, b[3]+6*day)
	}
}

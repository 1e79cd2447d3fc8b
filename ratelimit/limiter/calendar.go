package limiter

import (
	"fmt"
	"strconv"
	"time"
)

// CalendarUnit is the period of a calendar fixed_window: the quota resets
// at the start of each hour, day, ISO week or month in a time zone rather
// than at multiples of the window since the epoch.
type CalendarUnit uint8

// Calendar units. NoCalendar: an ordinary fixed_window, aligned to the epoch.
const (
	NoCalendar CalendarUnit = iota
	CalendarHour
	CalendarDay
	CalendarWeek
	CalendarMonth
)

var calendarNames = [...]string{"", "hour", "day", "week", "month"}

// String is the unit's name as the JSON config writes it ("" for none).
func (u CalendarUnit) String() string {
	if int(u) < len(calendarNames) {
		return calendarNames[u]
	}
	return fmt.Sprintf("CalendarUnit(%d)", u)
}

// ParseCalendarUnit parses "hour", "day", "week" or "month".
func ParseCalendarUnit(s string) (CalendarUnit, bool) {
	for i, n := range calendarNames {
		if i > 0 && n == s {
			return CalendarUnit(i), true
		}
	}
	return NoCalendar, false
}

// Nominal is the unit's usual length, used where a zone needs one window
// length (RateLimit-Policy, ban windows, the retry of a cost that never
// fits): 1h, 24h, 168h, or 31 days for a month.
func (u CalendarUnit) Nominal() time.Duration {
	switch u {
	case CalendarHour:
		return time.Hour
	case CalendarDay:
		return 24 * time.Hour
	case CalendarWeek:
		return 7 * 24 * time.Hour
	case CalendarMonth:
		return 31 * 24 * time.Hour
	}
	return 0
}

// Calendar is a calendar period in a time zone. The zero value (Unit
// NoCalendar) is no calendar; a nil Loc is UTC.
type Calendar struct {
	Unit CalendarUnit
	Loc  *time.Location
}

// On reports whether c is a calendar (not the zero value).
func (c Calendar) On() bool { return c.Unit != NoCalendar }

func (c Calendar) loc() *time.Location {
	if c.Loc == nil {
		return time.UTC
	}
	return c.Loc
}

// Period returns the start and end of the period containing t: start <= t
// < end, and the next period starts at end. Periods follow the local clock
// of c.Loc:
//   - hour: from one local hh:00 to the next, so a 23- or 25-hour day has
//     23 or 25 hours (the repeated hour of a fall-back is two periods);
//   - day: from local midnight to the next;
//   - week: ISO weeks, from Monday 00:00 local;
//   - month: from the first of the month 00:00 local.
//
// Where local midnight does not exist (a DST gap at midnight), the period
// starts at the first instant at or after it. Hours assume offset changes
// of whole hours; a zone that shifts by 30 minutes (Lord Howe) gets a
// shorter period at the shift.
func (c Calendar) Period(t time.Time) (start, end time.Time) {
	loc := c.loc()
	if c.Unit == CalendarHour {
		return hourPeriod(t.In(loc))
	}
	lt := t.In(loc)
	y, m, d := lt.Date()
	// label: the local wall-clock start of the period, read as UTC.
	var from time.Time
	switch c.Unit {
	case CalendarWeek:
		wd := (int(lt.Weekday()) + 6) % 7 // Monday 0
		from = time.Date(y, m, d-wd, 0, 0, 0, 0, time.UTC)
	case CalendarMonth:
		from = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	default: // day
		from = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	start = firstLocalAtOrAfter(from, loc)
	end = firstLocalAtOrAfter(c.next(from), loc)
	for i := 0; i < 4 && !t.Before(end); i++ {
		// A fall-back across the boundary: t reads the previous label's
		// local time but lies past the next period's start.
		from = c.next(from)
		start, end = end, firstLocalAtOrAfter(c.next(from), loc)
	}
	return start, end
}

// next is the wall-clock label (as UTC) of the period after from.
func (c Calendar) next(from time.Time) time.Time {
	switch c.Unit {
	case CalendarWeek:
		return from.AddDate(0, 0, 7)
	case CalendarMonth:
		return from.AddDate(0, 1, 0)
	}
	return from.AddDate(0, 0, 1)
}

// hourPeriod is Period for hours: back to the local hh:00 (not before
// the current zone offset began), forward to the next one (not past the
// next offset change).
func hourPeriod(lt time.Time) (start, end time.Time) {
	zs, ze := lt.ZoneBounds()
	start = lt.Add(-intoHour(lt))
	if !zs.IsZero() && start.Before(zs) {
		start = zs
	}
	end = start.Add(time.Hour - intoHour(start.In(lt.Location())))
	if !ze.IsZero() && ze.Before(end) {
		end = ze
	}
	return start.In(lt.Location()), end.In(lt.Location())
}

// intoHour is how far t's local clock is past its hh:00.
func intoHour(t time.Time) time.Duration {
	return time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second + time.Duration(t.Nanosecond())
}

// firstLocalAtOrAfter returns the first instant whose local clock in loc
// reads wall (a wall-clock time given in UTC) or later: local wall itself
// when it exists once, its first occurrence when it is repeated, and the
// end of the gap when it falls in one. It walks the zone's offsets from
// 15 hours before (past every UTC offset).
func firstLocalAtOrAfter(wall time.Time, loc *time.Location) time.Time {
	u := wall.Add(-15 * time.Hour)
	for range 16 {
		lu := u.In(loc)
		_, off := lu.Zone()
		_, ze := lu.ZoneBounds()
		cand := wall.Add(-time.Duration(off) * time.Second)
		if cand.Before(u) {
			cand = u
		}
		if ze.IsZero() || cand.Before(ze) {
			return cand.In(loc)
		}
		u = ze
	}
	return time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), 0, loc)
}

// calendarBounds are the boundaries a calendar ask carries around now
// (µs): the previous period's start, the current period's start and end,
// and the next period's end. A store picks the period containing its own
// clock among them (see pickPeriod): the Redis TIME may differ from the
// clock they were computed with by less than a period.
func calendarBounds(c Calendar, now int64) [4]int64 {
	s, e := c.Period(time.UnixMicro(now))
	ps, _ := c.Period(s.Add(-time.Nanosecond))
	_, ne := c.Period(e)
	return [4]int64{ps.UnixMicro(), s.UnixMicro(), e.UnixMicro(), ne.UnixMicro()}
}

// pickPeriod returns the period among b (see calendarBounds) containing
// at; past either end, the nearest one (clocks that differ by more than a
// period: the script does the same).
func pickPeriod(b [4]int64, at int64) (start, end int64) {
	switch {
	case at < b[1]:
		return b[0], b[1]
	case at < b[2]:
		return b[1], b[2]
	case at < b[3]:
		return b[2], b[3]
	}
	// The store's clock is past every boundary sent (this host's clock is
	// more than a period behind): keep counting in the last period, which
	// ends a period's length from now, rather than in one that has ended
	// (its state would expire at once and never refuse).
	return b[2], at + b[3] - b[2]
}

// burstArg is the ask's burst in ARGV, or, for a calendar fixed_window
// (which has no burst), its period boundaries "c <prev start> <start>
// <end> <next end>" (µs): the script picks the period containing Redis
// TIME among them.
//
// With thresholds, " t <mark>..." follows (see appendMarks).
func (p params) burstArg() any {
	if !p.calendarOn() && len(p.marks) == 0 && !p.usage.on() {
		return p.burst
	}
	b := make([]byte, 0, 72+len(p.marks)*8+32+2*len(p.usage.Key))
	if p.calendarOn() {
		b = append(b, 'c')
		for _, x := range p.cal {
			b = append(b, ' ')
			b = strconv.AppendInt(b, x, 10)
		}
	} else {
		b = strconv.AppendInt(b, p.burst, 10)
	}
	if len(p.marks) > 0 {
		b = appendMarks(b, p.marks)
	}
	if p.usage.on() {
		b = appendUsage(b, p.usage)
	}
	return string(b)
}

// nowUs is the clock the boundaries of calendar asks are computed around.
func (s *RedisStore) nowUs() int64 {
	if s.clock != nil {
		return s.clock().UnixMicro()
	}
	return time.Now().UnixMicro()
}

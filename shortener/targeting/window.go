package targeting

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones in any binary, whatever the host has
)

// window is a TimeWindow compiled.
type window struct {
	loc              *time.Location
	from, until      time.Time // zero: unbounded
	days             uint8     // bit d for time.Weekday d; 0: any day
	hourFrom, hourTo int       // local hours [hourFrom, hourTo); hourTo 0: any hour
}

// dayNames are the values of days, in time.Weekday order.
var dayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// window judges a time condition at path.
func (c *compiler) window(path string, in *TimeWindow) (*window, *TimeWindow, error) {
	w := &window{loc: time.UTC}
	norm := &TimeWindow{TZ: in.TZ}
	if in.TZ != "" {
		loc, err := c.location(in.TZ)
		if err != nil {
			return nil, nil, fieldErr(path+".tz", "%s", err.Error())
		}
		w.loc = loc
	}
	var err error
	if w.from, norm.From, err = instant(path+".from", in.From); err != nil {
		return nil, nil, err
	}
	if w.until, norm.Until, err = instant(path+".until", in.Until); err != nil {
		return nil, nil, err
	}
	if !w.from.IsZero() && !w.until.IsZero() && !w.from.Before(w.until) {
		return nil, nil, fieldErr(path+".until", "must be after from")
	}
	if norm.Days, err = normList(path+".days", in.Days, len(dayNames), oneOf(dayNames)); err != nil {
		return nil, nil, err
	}
	for _, d := range norm.Days {
		w.days |= 1 << dayIndex(d)
	}
	if in.Hours != nil {
		if err := w.setHours(path+".hours", *in.Hours); err != nil {
			return nil, nil, err
		}
		h := *in.Hours
		norm.Hours = &h
	}
	if w.from.IsZero() && w.until.IsZero() && w.days == 0 && w.hourTo == 0 {
		return nil, nil, fieldErr(path, "needs from, until, days or hours")
	}
	return w, norm, nil
}

// location loads an IANA zone once per set. "Local" (the host's zone) is
// refused: a rule must mean the same on every host.
func (c *compiler) location(name string) (*time.Location, error) {
	if loc, ok := c.locations[name]; ok {
		return loc, nil
	}
	if len(name) > MaxTimeZoneName || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-") != "" || name == "Local" {
		return nil, errUnknownZone(name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, errUnknownZone(name)
	}
	c.locations[name] = loc
	return loc, nil
}

func errUnknownZone(name string) error {
	return fmt.Errorf("%q is not an IANA time zone name (Europe/Paris, UTC)", truncate(name, MaxTimeZoneName))
}

// instant reads an optional RFC 3339 time, normalised to UTC, from
// 1970 to 9999 in UTC.
func instant(path, s string) (time.Time, string, error) {
	if s == "" {
		return time.Time{}, "", nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, "", fieldErr(path, "must be an RFC 3339 time (2026-01-01T00:00:00Z)")
	}
	// In UTC a year past 9999 or before 0 would not be RFC 3339 any more.
	if t = t.UTC(); t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, "", fieldErr(path, "must be from 1970 to 9999 (UTC)")
	}
	return t, t.Format(time.RFC3339Nano), nil
}

func dayIndex(name string) int {
	for i, n := range dayNames {
		if n == name {
			return i
		}
	}
	return 0
}

// setHours judges hours: from 0 to 23, until 1 to 24, from < until.
func (w *window) setHours(path string, h HourRange) error {
	switch {
	case h.From < 0 || h.From > 23:
		return fieldErr(path+".from", "must be 0 to 23, not %d", h.From)
	case h.Until < 1 || h.Until > 24:
		return fieldErr(path+".until", "must be 1 to 24, not %d", h.Until)
	case h.From >= h.Until:
		return fieldErr(path+".until", "must be after from")
	}
	w.hourFrom, w.hourTo = h.From, h.Until
	return nil
}

// holds reports whether now is in the window; the zero time is in none.
// Days and hours are read in the zone's local time at now (through lc,
// which keeps the last zone's), so a day or hour a DST change skips holds
// no instant and one it repeats holds two.
func (w *window) holds(now time.Time, lc *localClock) bool {
	if now.IsZero() {
		return false
	}
	if !w.from.IsZero() && now.Before(w.from) || !w.until.IsZero() && !now.Before(w.until) {
		return false
	}
	if w.days == 0 && w.hourTo == 0 {
		return true
	}
	day, hour := lc.at(now, w.loc)
	if w.days != 0 && w.days&(1<<day) == 0 {
		return false
	}
	return w.hourTo == 0 || w.hourFrom <= hour && hour < w.hourTo
}

// localClock is the weekday and hour of one instant in the last zone
// asked: the rules of a set mostly share one zone.
type localClock struct {
	loc  *time.Location
	day  time.Weekday
	hour int
}

func (lc *localClock) at(now time.Time, loc *time.Location) (time.Weekday, int) {
	if lc.loc != loc {
		local := now.In(loc)
		lc.loc, lc.day, lc.hour = loc, local.Weekday(), local.Hour()
	}
	return lc.day, lc.hour
}

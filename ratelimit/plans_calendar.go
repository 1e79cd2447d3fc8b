package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Calendar plans: a plans table may have the optional columns `calendar`
// (text: hour, day, week or month) and `tz` (text: an IANA zone). A row
// whose calendar is set gets a calendar period instead of its
// `window_seconds` (then ignored), in its tz, or the zone's (UTC when the
// zone has none); fixed_window zones only (elsewhere the row is skipped).
// A row without one gets its window, whatever the zone's own period.

// planCalendar is a row's calendar period: its unit and its zone ("": the
// zone's).
type planCalendar struct {
	unit limiter.CalendarUnit
	tz   string
	loc  *time.Location // tz loaded (nil: the zone's)
}

// planColumns are the optional columns of a plans table.
type planColumns struct {
	calendar, tz bool
}

// columns reads which optional columns the table has.
func (l *planLoader) columns(ctx context.Context) (planColumns, error) {
	rows, err := l.pool.Query(ctx, "SELECT * FROM "+l.ident+" LIMIT 0")
	if err != nil {
		return planColumns{}, fmt.Errorf("reading plans: %w", err)
	}
	defer rows.Close()
	var c planColumns
	for _, f := range rows.FieldDescriptions() {
		switch f.Name {
		case "calendar":
			c.calendar = true
		case "tz":
			c.tz = true
		}
	}
	return c, rows.Err()
}

// plansQuery is the query reading the table (its identifier sanitized)
// with its optional columns.
func plansQuery(ident string, c planColumns) string {
	q := "SELECT plan_key::text, events::bigint, COALESCE(window_seconds, 0)::float8, COALESCE(burst, 0)::bigint"
	if c.calendar {
		q += ", calendar::text"
	} else {
		q += ", NULL::text"
	}
	if c.tz {
		q += ", tz::text"
	} else {
		q += ", NULL::text"
	}
	return q + " FROM " + ident
}

// calendarOf is a row's calendar period (nil: none); an error when its
// values are unknown or the zones' algorithm has no calendar.
func calendarOf(algorithm string, calendar, tz *string) (*planCalendar, error) {
	if calendar == nil || *calendar == "" {
		return nil, nil
	}
	u, ok := limiter.ParseCalendarUnit(*calendar)
	if !ok {
		return nil, fmt.Errorf("calendar %q: must be hour, day, week or month", *calendar)
	}
	if algorithm != limiter.FixedWindow {
		return nil, fmt.Errorf("calendar %q: only fixed_window zones take a calendar period, not %s", *calendar, algorithm)
	}
	pc := &planCalendar{unit: u}
	if tz != nil && *tz != "" {
		loc, err := time.LoadLocation(*tz)
		if err != nil || *tz == "Local" {
			return nil, fmt.Errorf("tz %q: not an IANA time zone", *tz)
		}
		pc.tz, pc.loc = *tz, loc
	}
	return pc, nil
}

// calendar is the limiter's calendar of plan p in a zone whose own is
// zone: none, or p's unit in p's time zone, else in the zone's.
func (p plan) calendar(zone limiter.Calendar) limiter.Calendar {
	if p.cal == nil {
		return limiter.Calendar{}
	}
	loc := p.cal.loc
	if loc == nil {
		loc = zone.Loc
	}
	return limiter.Calendar{Unit: p.cal.unit, Loc: loc}
}

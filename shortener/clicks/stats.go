package clicks

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Stats are a link's counters over a window, as the click sinks
// read them (the API adds the timeseries: StatsAnswer).
type Stats struct {
	Code string `json:"code"`
	// Domain is the link's link domain; absent for the default domain.
	Domain string              `json:"domain,omitempty"`
	Total  int64               `json:"total"`
	People int64               `json:"people"`
	Bots   int64               `json:"bots"`
	Hourly []link.HourlyClicks `json:"hourly"`
	// Daily are the window's days past clicks_hourly_retention (whole UTC
	// days overlapping it), counted in Total, People and Bots and in the
	// timeseries.
	Daily     []DailyClicks    `json:"-"`
	Referrers []ReferrerClicks `json:"referrers"`
	// Uniques estimates the distinct visitors (people, not bots) over the
	// UTC days overlapping the window: one day's visitors, or over
	// several days visitor-days (each day has its own salt). Error under
	// 1% (HyperLogLog at precision 14, exact while small).
	Uniques int64 `json:"uniques"`
	// Visitors are the sketches behind Uniques, one per UTC day that has
	// one, in day order: the timeseries merges them per bucket.
	Visitors []DayVisitors `json:"-"`
	// AllTime counts every click ever counted for the link: kept apart
	// from the rollups, never pruned by clicks_retention. Total, People
	// and Bots above cover the requested window only.
	AllTime *Totals `json:"all_time,omitempty"`
}

// Totals are a link's all-time counters: Total is People + Bots +
// Imported.
type Totals struct {
	Total  int64 `json:"total"`
	People int64 `json:"people"`
	Bots   int64 `json:"bots"`
	// Imported is the click total the link brought from another
	// shortener (an import's clicks, import.go): neither people nor bots,
	// and without time, so no window or timeseries counts it.
	Imported int64 `json:"imported"`
}

// ReferrerClicks counts clicks referred by one host.
type ReferrerClicks struct {
	Host  string `json:"host"`
	Count int64  `json:"count"`
}

// Stats ranges: the default window and the widest one accepted.
const (
	DefaultStatsWindow = 30 * 24 * time.Hour
	MaxStatsWindow     = 366 * 24 * time.Hour
	// TopReferrers is how many referrer hosts stats list.
	TopReferrers = 10
)

// ErrBadStatsRange wraps every error of ParseStatsRange: the API answers
// it with 400.
var ErrBadStatsRange = errors.New("invalid stats range")

// ParseStatsRange reads the `from` and `to` query parameters (RFC 3339).
// Defaults: to = now, from = to - 30 days. It refuses repeated or
// unparsable values, from after to, and a window over 366 days; each error
// wraps ErrBadStatsRange and names the parameter.
func ParseStatsRange(q url.Values, now time.Time) (from, to time.Time, err error) {
	get := func(name string) (time.Time, bool, error) {
		vs := q[name]
		switch len(vs) {
		case 0:
			return time.Time{}, false, nil
		case 1:
		default:
			return time.Time{}, false, fmt.Errorf("%w: %s given %d times", ErrBadStatsRange, name, len(vs))
		}
		t, err := link.ParseTime(vs[0])
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%w: %s must be an RFC 3339 time like 2006-01-02T15:04:05Z", ErrBadStatsRange, name)
		}
		if t.Year() < 2000 || t.Year() > 9999 {
			return time.Time{}, false, fmt.Errorf("%w: %s is out of range", ErrBadStatsRange, name)
		}
		return t.UTC(), true, nil
	}
	to, hasTo, err := get("to")
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	from, hasFrom, err := get("from")
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !hasTo {
		to = now.UTC()
	}
	if !hasFrom {
		from = to.Add(-DefaultStatsWindow)
	}
	if from.After(to) {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: from is after to", ErrBadStatsRange)
	}
	if to.Sub(from) > MaxStatsWindow {
		return time.Time{}, time.Time{}, fmt.Errorf("%w: the window from..to is longer than 366 days", ErrBadStatsRange)
	}
	return from, to, nil
}

// ClickAggregate is a set of batches folded into counter increments, the
// unit both sinks write.
type ClickAggregate struct {
	Hourly    map[HourKey]*[2]int64 // people, bots
	Referrers map[RefKey]int64
	Visitors  map[DayKey][]uint64 // hashes of the people with a known visitor
	Dims      map[DimKey]int64
	// DimVisitors are the Visitors per value of the dimensions in
	// UniqueDims (DimRule, DimVariant): the sketches behind a breakdown's
	// uniques.
	DimVisitors map[DimKey][]uint64
}

type HourKey struct {
	Code string
	Hour int64 // unix seconds, start of the hour
}

type RefKey struct {
	Code string
	Day  int64 // unix seconds, start of the UTC day
	Host string
}

func AggregateClicks(batches []Batch) ClickAggregate {
	a := ClickAggregate{Hourly: make(map[HourKey]*[2]int64), Referrers: make(map[RefKey]int64), Visitors: make(map[DayKey][]uint64),
		Dims: make(map[DimKey]int64), DimVisitors: make(map[DimKey][]uint64)}
	for _, b := range batches {
		for _, c := range b.Clicks {
			sec := c.At.Unix()
			hk := HourKey{c.Code, sec - Mod(sec, 3600)}
			v := a.Hourly[hk]
			if v == nil {
				v = new([2]int64)
				a.Hourly[hk] = v
			}
			if c.Bot() {
				v[1]++
			} else {
				v[0]++
				if c.Visitor != 0 {
					dk := DayKey{c.Code, sec - Mod(sec, 86400)}
					a.Visitors[dk] = append(a.Visitors[dk], c.Visitor)
				}
			}
			if ref := c.Referrer; ref != "" {
				if !ValidReferrerHost(ref) {
					ref = OtherReferrer // never store an unbounded host
				}
				a.Referrers[RefKey{c.Code, sec - Mod(sec, 86400), ref}]++
			}
			a.addDims(c, sec-Mod(sec, 86400))
		}
	}
	return a
}

func Mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// SortedHours returns the hourly keys in a fixed order, so concurrent
// transactions lock rows in the same order (no deadlocks).
func (a ClickAggregate) SortedHours() []HourKey {
	keys := make([]HourKey, 0, len(a.Hourly))
	for k := range a.Hourly {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Code != keys[j].Code {
			return keys[i].Code < keys[j].Code
		}
		return keys[i].Hour < keys[j].Hour
	})
	return keys
}

// VisitorDays returns the days with visitors in (code, day) order, the
// order the click transaction locks their rows in.
func (a ClickAggregate) VisitorDays() []DayKey {
	days := make([]DayKey, 0, len(a.Visitors))
	for d := range a.Visitors {
		days = append(days, d)
	}
	sort.Slice(days, func(i, j int) bool {
		if days[i].Code != days[j].Code {
			return days[i].Code < days[j].Code
		}
		return days[i].Day < days[j].Day
	})
	return days
}

// RankReferrers sorts by count (then host) and keeps the first TopReferrers.
func RankReferrers(m map[string]int64) []ReferrerClicks {
	top := TopEntries(m, TopReferrers)
	out := make([]ReferrerClicks, len(top))
	for i, e := range top {
		out[i] = ReferrerClicks{Host: e.Value, Count: e.Clicks}
	}
	return out
}

// HourFloor and DayFloor give the first bucket overlapping t.
func HourFloor(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }
func DayFloor(t time.Time) time.Time  { return t.UTC().Truncate(24 * time.Hour) }

// DayRange returns the UTC days overlapping [from, to) as [first, end).
func DayRange(from, to time.Time) (first, end time.Time) {
	first, end = DayFloor(from), DayFloor(to)
	if to.After(end) {
		end = end.Add(24 * time.Hour)
	}
	return first, end
}

// TopEntries sorts by clicks (then value) and keeps the first limit.
func TopEntries(m map[string]int64, limit int) []BreakdownEntry {
	out := make([]BreakdownEntry, 0, len(m))
	for v, n := range m {
		out = append(out, BreakdownEntry{Value: v, Clicks: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Clicks != out[j].Clicks {
			return out[i].Clicks > out[j].Clicks
		}
		return out[i].Value < out[j].Value
	})
	return out[:min(len(out), limit)]
}

// HourlyAggregate is the rows of the links stored, as the click sinks add
// counters.
func HourlyAggregate(links []link.ImportLink, stored []bool) ClickAggregate {
	agg := ClickAggregate{Hourly: map[HourKey]*[2]int64{}}
	for i, l := range links {
		if !stored[i] {
			continue
		}
		for _, h := range l.Hourly {
			agg.Hourly[HourKey{Code: l.Code, Hour: h.Hour.Unix()}] = &[2]int64{h.People, h.Bots}
		}
	}
	return agg
}

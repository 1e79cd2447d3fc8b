package clicks

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
	_ "time/tzdata" // tz works on hosts without a zoneinfo database (containers)

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Granularities of a stats timeseries.
const (
	GranularityHour  = "hour"
	GranularityDay   = "day"
	GranularityWeek  = "week"  // ISO weeks, from Monday 00:00
	GranularityMonth = "month" // calendar months
)

// maxTZLen bounds the tz parameter: IANA names are far shorter.
const maxTZLen = 64

// SeriesPoint is one bucket of a stats timeseries: the clicks whose UTC
// Hour starts in [Start, next bucket's Start).
type SeriesPoint struct {
	// Start is the bucket's first instant in the series' time zone.
	Start  time.Time `json:"start"`
	Clicks int64     `json:"clicks"`
	People int64     `json:"people"`
	Bots   int64     `json:"bots"`
	// Uniques estimates the bucket's distinct visitors (people): the
	// merged daily sketches of its UTC days (WithUniques), visitor-days
	// when it spans several. Absent from hour buckets.
	Uniques *int64 `json:"uniques,omitempty"`
}

// StatsAnswer is the answer of `GET <api>/links/<code>/stats`: the
// window's counters and their timeseries.
type StatsAnswer struct {
	Stats
	Granularity string        `json:"granularity"`
	TZ          string        `json:"tz"`
	Timeseries  []SeriesPoint `json:"timeseries"`
	// GroupBy and Breakdown: with group_by, the dimension and its values
	// with the most clicks over the UTC days overlapping the window.
	GroupBy   string           `json:"group_by,omitempty"`
	Breakdown []BreakdownEntry `json:"breakdown,omitzero"`
}

// SeriesSpec is how a timeseries is cut: its granularity and time zone.
type SeriesSpec struct {
	Granularity string
	Loc         *time.Location
}

// ParseSeriesSpec reads the granularity (default day) and tz (an IANA
// zone; default UTC) query parameters; each error wraps ErrBadStatsRange
// and names the parameter.
func ParseSeriesSpec(q url.Values) (SeriesSpec, error) {
	spec := SeriesSpec{Granularity: GranularityDay, Loc: time.UTC}
	g, err := singleParam(q, "granularity")
	if err != nil {
		return spec, err
	}
	switch g {
	case "":
	case GranularityHour, GranularityDay, GranularityWeek, GranularityMonth:
		spec.Granularity = g
	default:
		return spec, fmt.Errorf("%w: granularity must be one of hour, day, week, month", ErrBadStatsRange)
	}
	tz, err := singleParam(q, "tz")
	if err != nil || tz == "" {
		return spec, err
	}
	if len(tz) > maxTZLen || !validZoneName(tz) {
		return spec, fmt.Errorf("%w: tz must be an IANA time zone name like Europe/Paris", ErrBadStatsRange)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return spec, fmt.Errorf("%w: tz: unknown time zone %q", ErrBadStatsRange, tz)
	}
	spec.Loc = loc
	return spec, nil
}

// singleParam returns a query parameter given at most once.
func singleParam(q url.Values, name string) (string, error) {
	vs := q[name]
	if len(vs) > 1 {
		return "", fmt.Errorf("%w: %s given %d times", ErrBadStatsRange, name, len(vs))
	}
	if len(vs) == 0 {
		return "", nil
	}
	return vs[0], nil
}

// validZoneName accepts the characters of IANA zone names (Area/City,
// Etc/GMT+5, UTC), never "Local" (the server's own zone), never a path
// that leaves the zone database.
func validZoneName(s string) bool {
	if s == "Local" || s[0] == '/' || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// Within refuses a series that needs hourly counters (granularity hour,
// or buckets shifted by a tz other than UTC) for a window starting before
// horizon, where only daily rollups are kept; the error wraps
// ErrBadStatsRange and names the parameter.
func (s SeriesSpec) Within(from, horizon time.Time) error {
	if !from.Before(horizon) {
		return nil
	}
	since := horizon.Format(time.RFC3339)
	if s.Granularity == GranularityHour {
		return fmt.Errorf("%w: granularity: hourly counters are kept from %s (clicks_hourly_retention); "+
			"before it use day, week or month", ErrBadStatsRange, since)
	}
	if s.Loc != time.UTC {
		return fmt.Errorf("%w: tz: hourly counters are kept from %s (clicks_hourly_retention); "+
			"before it buckets are UTC days: leave tz out", ErrBadStatsRange, since)
	}
	return nil
}

// floor returns the start of the bucket holding t.
func (s SeriesSpec) floor(t time.Time) time.Time {
	t = t.In(s.Loc)
	switch s.Granularity {
	case GranularityHour:
		return t.Truncate(time.Hour) // the UTC hour: rollups are hourly in UTC
	case GranularityWeek:
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, s.Loc)
		return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	case GranularityMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, s.Loc)
	}
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, s.Loc)
}

// Next returns the start of the bucket after the one starting at start.
func (s SeriesSpec) next(start time.Time) time.Time {
	switch s.Granularity {
	case GranularityHour:
		return start.Add(time.Hour)
	case GranularityWeek:
		return s.floor(start.AddDate(0, 0, 7))
	case GranularityMonth:
		return s.floor(start.AddDate(0, 1, 0))
	}
	return s.floor(start.AddDate(0, 0, 1)) // the next midnight, after 23, 24 or 25 hours
}

// Series buckets the hourly counters of [from, to) (the hours overlapping
// it) into the points from the bucket holding from to the one holding the
// last instant before to, empty ones included, so that the points sum to
// the window's counters. An hourly counter counts in the bucket its hour
// starts in (in zones offset by a fraction of an hour, that hour
// straddles two local hours or days), or, for the hour holding from when
// it starts in the bucket before, in the first.
func (s SeriesSpec) Series(hourly []link.HourlyClicks, from, to time.Time) []SeriesPoint {
	points := []SeriesPoint{}
	if !from.Before(to) {
		return points // an empty window holds no instant
	}
	index := map[int64]int{}
	for start := s.floor(from); start.Before(to); start = s.next(start) {
		index[start.Unix()] = len(points)
		points = append(points, SeriesPoint{Start: start})
	}
	if len(points) == 0 {
		return points
	}
	for _, h := range hourly {
		i, ok := index[s.floor(h.Hour).Unix()]
		if !ok && h.Hour.Before(points[0].Start) {
			i = 0 // the hour holding from starts in the bucket before
		} else if !ok {
			i = len(points) - 1
		}
		points[i].People += h.People
		points[i].Bots += h.Bots
		points[i].Clicks += h.People + h.Bots
	}
	return points
}

// StatsFormat reads the format query parameter of the stats: json (the
// default) or csv.
func StatsFormat(q url.Values) (string, error) {
	f, err := singleParam(q, "format")
	switch {
	case err != nil:
		return "", err
	case f == "" || f == "json":
		return "json", nil
	case f == "csv":
		return f, nil
	}
	return "", fmt.Errorf("%w: format must be json or csv", ErrBadStatsRange)
}

// WriteSeriesCSV writes the timeseries as CSV: a header, then one row per
// bucket (start in RFC 3339 in the series' zone; uniques empty in hour
// buckets), every cell through link.CSVCell like the breakdown's.
func WriteSeriesCSV(w http.ResponseWriter, code string, points []SeriesPoint) error {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+code+`-clicks.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"start", "clicks", "people", "bots", "uniques"})
	for _, p := range points {
		uniques := ""
		if p.Uniques != nil {
			uniques = strconv.FormatInt(*p.Uniques, 10)
		}
		row := []string{p.Start.Format(time.RFC3339), strconv.FormatInt(p.Clicks, 10),
			strconv.FormatInt(p.People, 10), strconv.FormatInt(p.Bots, 10), uniques}
		for i := range row {
			row[i] = link.CSVCell(row[i])
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

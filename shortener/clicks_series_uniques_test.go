package shortener

import (
	"fmt"
	"testing"
	"time"
)

// daySketch returns a sketch of the visitors first..last (hashed under
// one test salt) for the UTC day of day.
func daySketch(t *testing.T, day time.Time, first, last int) DayVisitors {
	t.Helper()
	salt := []byte("series-uniques-test-salt")
	var hashes []uint64
	for i := first; i <= last; i++ {
		hashes = append(hashes, visitorHash(salt, fmt.Sprintf("203.0.113.%d", i), "ua"))
	}
	b, err := addVisitors(nil, hashes)
	if err != nil {
		t.Fatal(err)
	}
	return DayVisitors{Day: day, Sketch: b}
}

// uniquesString renders the points as "start uniques, ..." (- for none).
func uniquesString(points []SeriesPoint) string {
	s := ""
	for i, p := range points {
		if i > 0 {
			s += ", "
		}
		u := "-"
		if p.Uniques != nil {
			u = fmt.Sprint(*p.Uniques)
		}
		s += p.Start.Format(time.RFC3339) + " " + u
	}
	return s
}

// TestSeriesUniques: day, week and month buckets merge the daily sketches
// of their UTC days (a day counts in the local bucket holding its 12:00
// UTC, a day before the first bucket in the first), hour buckets have
// none.
func TestSeriesUniques(t *testing.T) {
	d1 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC) // a Monday
	d2, d3 := d1.AddDate(0, 0, 1), d1.AddDate(0, 0, 2)
	// 100 on d1, 100 on d2 of whom 50 came on d1 too (one salt here, so
	// they merge), 10 others on d3: sparse sketches, exact.
	days := []DayVisitors{daySketch(t, d1, 1, 100), daySketch(t, d2, 51, 150), daySketch(t, d3, 1001, 1010)}
	for _, c := range []struct {
		spec     seriesSpec
		from, to time.Time
		want     string
	}{
		{seriesSpec{GranularityDay, time.UTC}, d1, d3.Add(24 * time.Hour),
			"2026-11-23T00:00:00Z 100, 2026-11-24T00:00:00Z 100, 2026-11-25T00:00:00Z 10"},
		{seriesSpec{GranularityDay, time.UTC}, d1, d1.AddDate(0, 0, 4),
			"2026-11-23T00:00:00Z 100, 2026-11-24T00:00:00Z 100, 2026-11-25T00:00:00Z 10, 2026-11-26T00:00:00Z 0"},
		{seriesSpec{GranularityWeek, time.UTC}, d1, d3.Add(24 * time.Hour), "2026-11-23T00:00:00Z 160"},
		{seriesSpec{GranularityMonth, time.UTC}, d1, d3.Add(24 * time.Hour), "2026-11-01T00:00:00Z 160"},
		// 12:00 UTC is 07:00 in New York: each UTC day is the local day of
		// the same date, not the evening before.
		{seriesSpec{GranularityDay, mustZone(t, "America/New_York")}, d1.Add(5 * time.Hour), d3.Add(29 * time.Hour),
			"2026-11-23T00:00:00-05:00 100, 2026-11-24T00:00:00-05:00 100, 2026-11-25T00:00:00-05:00 10"},
		// From Tokyo's midnight of the 24th (15:00 UTC on the 23rd): d1's
		// 12:00 UTC falls before the first bucket and counts in it.
		{seriesSpec{GranularityDay, mustZone(t, "Asia/Tokyo")}, d1.Add(15 * time.Hour), d2.Add(15 * time.Hour),
			"2026-11-24T00:00:00+09:00 150"},
		{seriesSpec{GranularityHour, time.UTC}, d1.Add(10 * time.Hour), d1.Add(12 * time.Hour),
			"2026-11-23T10:00:00Z -, 2026-11-23T11:00:00Z -"},
	} {
		var read []DayVisitors // what the sinks read: the UTC days overlapping the window
		first, end := dayRange(c.from, c.to)
		for _, d := range days {
			if !d.Day.Before(first) && d.Day.Before(end) {
				read = append(read, d)
			}
		}
		points := c.spec.series(nil, c.from, c.to)
		c.spec.withUniques(points, read)
		if got := uniquesString(points); got != c.want {
			t.Errorf("%s in %s from %v to %v: uniques %s, want %s", c.spec.granularity, c.spec.loc, c.from, c.to, got, c.want)
		}
	}
}

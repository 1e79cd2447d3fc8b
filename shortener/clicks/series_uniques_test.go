package clicks

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
		hashes = append(hashes, VisitorHash(salt, fmt.Sprintf("203.0.113.%d", i), "ua"))
	}
	b, err := AddVisitors(nil, hashes)
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
		spec     SeriesSpec
		from, to time.Time
		want     string
	}{
		{SeriesSpec{GranularityDay, time.UTC}, d1, d3.Add(24 * time.Hour),
			"2026-11-23T00:00:00Z 100, 2026-11-24T00:00:00Z 100, 2026-11-25T00:00:00Z 10"},
		{SeriesSpec{GranularityDay, time.UTC}, d1, d1.AddDate(0, 0, 4),
			"2026-11-23T00:00:00Z 100, 2026-11-24T00:00:00Z 100, 2026-11-25T00:00:00Z 10, 2026-11-26T00:00:00Z 0"},
		{SeriesSpec{GranularityWeek, time.UTC}, d1, d3.Add(24 * time.Hour), "2026-11-23T00:00:00Z 160"},
		{SeriesSpec{GranularityMonth, time.UTC}, d1, d3.Add(24 * time.Hour), "2026-11-01T00:00:00Z 160"},
		// 12:00 UTC is 07:00 in New York: each UTC day is the local day of
		// the same date, not the evening before.
		{SeriesSpec{GranularityDay, mustZone(t, "America/New_York")}, d1.Add(5 * time.Hour), d3.Add(29 * time.Hour),
			"2026-11-23T00:00:00-05:00 100, 2026-11-24T00:00:00-05:00 100, 2026-11-25T00:00:00-05:00 10"},
		// From Tokyo's midnight of the 24th (15:00 UTC on the 23rd): d1's
		// 12:00 UTC falls before the first bucket and counts in it.
		{SeriesSpec{GranularityDay, mustZone(t, "Asia/Tokyo")}, d1.Add(15 * time.Hour), d2.Add(15 * time.Hour),
			"2026-11-24T00:00:00+09:00 150"},
		{SeriesSpec{GranularityHour, time.UTC}, d1.Add(10 * time.Hour), d1.Add(12 * time.Hour),
			"2026-11-23T10:00:00Z -, 2026-11-23T11:00:00Z -"},
	} {
		var read []DayVisitors // what the sinks read: the UTC days overlapping the window
		first, end := DayRange(c.from, c.to)
		for _, d := range days {
			if !d.Day.Before(first) && d.Day.Before(end) {
				read = append(read, d)
			}
		}
		points := c.spec.Series(nil, c.from, c.to)
		c.spec.WithUniques(points, read)
		if got := uniquesString(points); got != c.want {
			t.Errorf("%s in %s from %v to %v: uniques %s, want %s", c.spec.Granularity, c.spec.Loc, c.from, c.to, got, c.want)
		}
	}
}

// FuzzSeriesUniques: for any window, granularity and zone, with disjoint
// Visitors on each UTC day overlapping the window (a few each: sparse
// sketches, exact), each day, week or month bucket counts the visitors of
// the days whose 12:00 UTC lies within its bounds (before the first: in
// the first; an oracle from the bucket bounds, not floor), the buckets add
// up to the window's merged estimate, and hour buckets have none.
func FuzzSeriesUniques(f *testing.F) {
	zones := []string{"UTC", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati", "Pacific/Chatham",
		"America/Santiago", "Pacific/Pago_Pago", "Pacific/Apia"}
	f.Add(int64(1_800_000_000), uint16(100), uint8(1), uint8(1), uint64(1))
	f.Add(int64(1_792_800_000), uint16(2000), uint8(3), uint8(4), uint64(2))
	f.Add(int64(1_792_800_000), uint16(400), uint8(2), uint8(7), uint64(3))
	f.Fuzz(func(t *testing.T, fromUnix int64, spanHours uint16, g, z uint8, seed uint64) {
		from := time.Unix(946684800+((fromUnix%(250*365*86400))+250*365*86400)%(250*365*86400), 0).UTC()
		to := from.Add(time.Duration(int(spanHours)%(24*120)) * time.Hour).Add(time.Duration(seed%3600) * time.Second)
		spec := SeriesSpec{[]string{GranularityHour, GranularityDay, GranularityWeek, GranularityMonth}[g%4], mustZone(t, zones[int(z)%len(zones)])}
		if spec.Granularity == GranularityHour && to.Sub(from) > 30*24*time.Hour {
			to = from.Add(30 * 24 * time.Hour)
		}
		points := spec.Series(nil, from, to)
		if len(points) == 0 {
			return
		}
		salt := []byte(fmt.Sprint("fuzz", seed))
		first, end := DayRange(from, to)
		var days []DayVisitors
		counts := map[int64]int64{}
		next := 0
		for d := first; d.Before(end); d = d.Add(24 * time.Hour) {
			n := int((seed>>(uint(d.Unix()/86400)%60))&3) + int(d.Unix()/86400%2) // 0..4 visitors
			var hashes []uint64
			for range n {
				hashes = append(hashes, VisitorHash(salt, fmt.Sprint(next), "ua"))
				next++
			}
			b, err := AddVisitors(nil, hashes)
			if err != nil {
				t.Fatal(err)
			}
			days = append(days, DayVisitors{Day: d, Sketch: b})
			counts[d.Unix()] = int64(n)
		}
		spec.WithUniques(points, days)
		if spec.Granularity == GranularityHour {
			for _, p := range points {
				if p.Uniques != nil {
					t.Fatalf("hour bucket %v has uniques %d", p.Start, *p.Uniques)
				}
			}
			return
		}
		want := make([]int64, len(points))
		for _, d := range days {
			mid := d.Day.Add(12 * time.Hour)
			i := len(points) - 1
			for i > 0 && points[i].Start.After(mid) {
				i--
			}
			want[i] += counts[d.Day.Unix()]
		}
		var sum int64
		for i, p := range points {
			if p.Uniques == nil || *p.Uniques != want[i] {
				t.Fatalf("%s %s from %v to %v: bucket %v uniques %v, want %d", spec.Granularity, spec.Loc, from, to, p.Start, p.Uniques, want[i])
			}
			sum += *p.Uniques
		}
		var all [][]byte
		for _, d := range days {
			all = append(all, d.Sketch)
		}
		if merged := MergeVisitors(all); merged != sum || sum != int64(next) {
			t.Fatalf("buckets sum to %d, the window's merged sketch %d, visitors %d", sum, merged, next)
		}
	})
}

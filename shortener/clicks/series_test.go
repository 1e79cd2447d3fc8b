package clicks

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestSeriesCalendar: buckets start at local midnights across a DST change
// (a 25-hour day), ISO weeks across a new year, calendar months, and UTC
// hours labelled in a zone half an hour off.
func TestSeriesCalendar(t *testing.T) {
	berlin, kolkata := mustZone(t, "Europe/Berlin"), mustZone(t, "Asia/Kolkata")
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		spec     SeriesSpec
		from, to string
		want     string
	}{
		{SeriesSpec{GranularityDay, berlin}, "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z",
			"2026-10-24T00:00:00+02:00 2026-10-25T00:00:00+02:00 2026-10-26T00:00:00+01:00"},
		{SeriesSpec{GranularityWeek, time.UTC}, "2026-12-27T00:00:00Z", "2027-01-12T00:00:00Z",
			"2026-12-21T00:00:00Z 2026-12-28T00:00:00Z 2027-01-04T00:00:00Z 2027-01-11T00:00:00Z"},
		{SeriesSpec{GranularityMonth, berlin}, "2027-01-31T22:00:00Z", "2027-04-01T00:00:00Z",
			"2027-01-01T00:00:00+01:00 2027-02-01T00:00:00+01:00 2027-03-01T00:00:00+01:00 2027-04-01T00:00:00+02:00"},
		{SeriesSpec{GranularityHour, kolkata}, "2026-11-29T09:10:00Z", "2026-11-29T11:00:00Z",
			"2026-11-29T14:30:00+05:30 2026-11-29T15:30:00+05:30"},
	} {
		var got []string
		for _, p := range c.spec.Series(nil, utc(c.from), utc(c.to)) {
			got = append(got, p.Start.Format(time.RFC3339))
		}
		if fmt.Sprint(got) != "["+c.want+"]" {
			t.Errorf("%s in %s from %s to %s: %v, want [%s]", c.spec.Granularity, c.spec.Loc, c.from, c.to, got, c.want)
		}
	}
	// The 25-hour day holds all its 25 hours.
	spec := SeriesSpec{GranularityDay, berlin}
	var hourly []link.HourlyClicks
	for h := utc("2026-10-24T22:00:00Z"); h.Before(utc("2026-10-25T23:00:00Z")); h = h.Add(time.Hour) {
		hourly = append(hourly, link.HourlyClicks{Hour: h, People: 1})
	}
	points := spec.Series(hourly, utc("2026-10-24T22:00:00Z"), utc("2026-10-25T23:00:00Z"))
	if len(points) != 1 || points[0].People != 25 || points[0].Clicks != 25 {
		t.Errorf("the day of the change back to CET: %+v, want one day of 25 clicks", points)
	}
}

// TestSeriesSpecParse: defaults and each refusal naming its parameter.
func TestSeriesSpecParse(t *testing.T) {
	spec, err := ParseSeriesSpec(url.Values{})
	if err != nil || spec.Granularity != GranularityDay || spec.Loc != time.UTC {
		t.Errorf("defaults = %v %v, want day UTC", spec, err)
	}
	spec, err = ParseSeriesSpec(url.Values{"granularity": {"month"}, "tz": {"America/Argentina/Buenos_Aires"}})
	if err != nil || spec.Granularity != GranularityMonth || spec.Loc.String() != "America/Argentina/Buenos_Aires" {
		t.Errorf("month in Buenos Aires = %v %v", spec, err)
	}
	for _, q := range []string{"granularity=Day", "granularity=", "tz=Local", "tz=/etc/localtime", "tz=..%2Fx", "tz=Europe/Nowhere",
		"tz=Etc/GMT%2B99", "tz=a%00b", "tz=%C3%A9", "tz=UTC&tz=UTC"} {
		v, _ := url.ParseQuery(q)
		if q == "granularity=" {
			if _, err := ParseSeriesSpec(v); err != nil {
				t.Errorf("%s: %v, want the default", q, err)
			}
			continue
		}
		if _, err := ParseSeriesSpec(v); err == nil {
			t.Errorf("%s accepted", q)
		}
	}
}

// FuzzStatsSeries: for any window, granularity and zone, the buckets are
// increasing, the first holds from, and every hourly counter of the window
// lands in the one bucket holding its hour (the hour holding from: in the
// first), so the series sums to the window's counters (an oracle
// independent of floor: the bucket bounds themselves).
func FuzzStatsSeries(f *testing.F) {
	zones := []string{"UTC", "Europe/Berlin", "Asia/Kolkata", "America/St_Johns", "Australia/Lord_Howe", "Pacific/Chatham",
		"America/Santiago", "Asia/Tehran", "Pacific/Apia"}
	f.Add(int64(1_800_000_000), uint16(100), uint8(1), uint8(1), uint64(1))
	f.Add(int64(1_792_800_000), uint16(2000), uint8(3), uint8(3), uint64(2))
	f.Fuzz(func(t *testing.T, fromUnix int64, spanHours uint16, g, z uint8, seed uint64) {
		from := time.Unix(946684800+((fromUnix%(250*365*86400))+250*365*86400)%(250*365*86400), 0).UTC()
		to := from.Add(time.Duration(int(spanHours)%(24*120)) * time.Hour).Add(time.Duration(seed%3600) * time.Second)
		spec := SeriesSpec{[]string{GranularityHour, GranularityDay, GranularityWeek, GranularityMonth}[g%4], mustZone(t, zones[int(z)%len(zones)])}
		if spec.Granularity == GranularityHour && to.Sub(from) > 30*24*time.Hour {
			to = from.Add(30 * 24 * time.Hour)
		}
		r := rand.New(rand.NewPCG(seed, 3))
		var hourly []link.HourlyClicks
		var sum int64
		for h := HourFloor(from); h.Before(to); h = h.Add(time.Hour) {
			if r.IntN(4) == 0 {
				n := int64(r.IntN(5) + 1)
				hourly = append(hourly, link.HourlyClicks{Hour: h, People: n, Bots: 1})
				sum += n + 1
			}
		}
		points := spec.Series(hourly, from, to)
		if !from.Before(to) {
			if len(points) != 0 {
				t.Fatalf("empty window gave %d points", len(points))
			}
			return
		}
		if len(points) == 0 || points[0].Start.After(from) || (len(points) > 1 && !points[1].Start.After(from)) {
			t.Fatalf("%s %s: first bucket %v does not hold from %v", spec.Granularity, spec.Loc, points[0].Start, from)
		}
		var total int64
		for i, p := range points {
			total += p.Clicks
			if i > 0 && !p.Start.After(points[i-1].Start) {
				t.Fatalf("%s %s: bucket %d starts %v, not after %v", spec.Granularity, spec.Loc, i, p.Start, points[i-1].Start)
			}
			if !p.Start.Before(to) {
				t.Fatalf("bucket %v starts at or after to %v", p.Start, to)
			}
		}
		want := make([]int64, len(points))
		for _, h := range hourly {
			i := len(points) - 1
			for i > 0 && points[i].Start.After(h.Hour) {
				i--
			}
			if points[i].Start.After(h.Hour) && h.Hour != HourFloor(from) {
				t.Fatalf("%s %s: hour %v before the first bucket %v", spec.Granularity, spec.Loc, h.Hour, points[0].Start)
			}
			want[i] += h.People + h.Bots
		}
		for i, p := range points {
			if p.Clicks != want[i] || p.People+p.Bots != p.Clicks {
				t.Fatalf("%s %s: bucket %v has %d clicks (%d+%d), its hours %d", spec.Granularity, spec.Loc, p.Start, p.Clicks, p.People, p.Bots, want[i])
			}
		}
		if total != sum {
			t.Fatalf("%s %s from %v to %v: series sums to %d, hourly to %d", spec.Granularity, spec.Loc, from, to, total, sum)
		}
	})
}

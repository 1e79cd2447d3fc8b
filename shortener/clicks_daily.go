package shortener

import (
	"encoding/binary"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// DailyClicks is one link's UTC day as the daily rollup holds it: the
// people and bots of the hourly counters rolled up into it once past
// clicks_hourly_retention (the hours still kept count in Hourly, never in
// both).
type DailyClicks struct {
	Day    time.Time
	People int64
	Bots   int64
}

// DayVisitors is one link's UTC day's visitor sketch (a marshalled
// HyperLogLog of visitorPrecision), as the daily rollup holds it.
type DayVisitors struct {
	Day    time.Time
	Sketch []byte
}

// dailyAsHours returns the daily rollups as counters dated at their day's
// start, as the timeseries cuts them.
func dailyAsHours(days []DailyClicks) []link.HourlyClicks {
	out := make([]link.HourlyClicks, len(days))
	for i, d := range days {
		out[i] = link.HourlyClicks{Hour: d.Day, People: d.People, Bots: d.Bots}
	}
	return out
}

// hourlyHorizon is the first moment whose hourly counters are kept with
// an hourly retention of keep (0: kept as long as the rest), at now:
// before it a window may only be cut into whole UTC days.
func hourlyHorizon(now time.Time, keep time.Duration) time.Time {
	if keep <= 0 {
		return time.Time{}
	}
	return dayFloor(now.Add(-keep))
}

// bucketClicksDaily holds the embedded daily rollups:
// code 0 day(8) → people(8) bots(8) visitor sketch.
var bucketClicksDaily = []byte("clicks_daily")

// dailyValue is the value of a bucketClicksDaily key.
type dailyValue struct {
	people, bots uint64
	visitors     []byte // a marshalled sketch; nil: none
}

// decodeDailyValue reads a stored value; anything shorter than the two
// counters reads as zero.
func decodeDailyValue(v []byte) dailyValue {
	if len(v) < 16 {
		return dailyValue{}
	}
	d := dailyValue{people: binary.BigEndian.Uint64(v[:8]), bots: binary.BigEndian.Uint64(v[8:16])}
	if len(v) > 16 {
		d.visitors = v[16:]
	}
	return d
}

func (d dailyValue) encode() []byte {
	out := make([]byte, 16, 16+len(d.visitors))
	binary.BigEndian.PutUint64(out[:8], d.people)
	binary.BigEndian.PutUint64(out[8:], d.bots)
	return append(out, d.visitors...)
}

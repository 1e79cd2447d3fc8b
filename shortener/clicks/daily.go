package clicks

import (
	"encoding/binary"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// DailyClicks is one link's UTC day as the daily rollup holds it: the
// People and bots of the hourly counters rolled up into it once past
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

// DailyAsHours returns the daily rollups as counters dated at their day's
// start, as the timeseries cuts them.
func DailyAsHours(days []DailyClicks) []link.HourlyClicks {
	out := make([]link.HourlyClicks, len(days))
	for i, d := range days {
		out[i] = link.HourlyClicks{Hour: d.Day, People: d.People, Bots: d.Bots}
	}
	return out
}

// HourlyHorizon is the first moment whose hourly counters are kept with
// an hourly retention of keep (0: kept as long as the rest), at now:
// before it a window may only be cut into whole UTC days.
func HourlyHorizon(now time.Time, keep time.Duration) time.Time {
	if keep <= 0 {
		return time.Time{}
	}
	return DayFloor(now.Add(-keep))
}

// BucketClicksDaily holds the embedded daily rollups:
// Code 0 day(8) → people(8) bots(8) visitor sketch.
var BucketClicksDaily = []byte("clicks_daily")

// dailyValue is the value of a BucketClicksDaily key.
type dailyValue struct {
	People, Bots uint64
	Visitors     []byte // a marshalled sketch; nil: none
}

// DecodeDailyValue reads a stored value; anything shorter than the two
// counters reads as zero.
func DecodeDailyValue(v []byte) dailyValue {
	if len(v) < 16 {
		return dailyValue{}
	}
	d := dailyValue{People: binary.BigEndian.Uint64(v[:8]), Bots: binary.BigEndian.Uint64(v[8:16])}
	if len(v) > 16 {
		d.Visitors = v[16:]
	}
	return d
}

func (d dailyValue) Encode() []byte {
	out := make([]byte, 16, 16+len(d.Visitors))
	binary.BigEndian.PutUint64(out[:8], d.People)
	binary.BigEndian.PutUint64(out[8:], d.Bots)
	return append(out, d.Visitors...)
}

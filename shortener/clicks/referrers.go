package clicks

import (
	"cmp"
	"strings"
)

// OtherReferrer is the referrer row that counts, per link and day, the
// clicks of hosts past the cap (clicks_referrers), and of a host literally
// named "other". It never takes one of the cap's places. Dimension values
// past the cap are counted under the same name (clicks_dims.go).
const OtherReferrer = "other"

// Bounds of clicks_referrers: named referrer hosts per link per UTC day.
const (
	MinClicksReferrers = 1
	MaxClicksReferrers = 10000
)

// DayKey is one link's UTC day: the unit the referrer cap counts hosts in.
type DayKey struct {
	Code string
	Day  int64 // unix seconds, start of the UTC day
}

func (d DayKey) Compare(o DayKey) int {
	return cmp.Or(strings.Compare(d.Code, o.Code), cmp.Compare(d.Day, o.Day))
}

// RefKey is a referrer host's counter on a link's day, capped per day.
func (k RefKey) Slot() DayKey              { return DayKey{k.Code, k.Day} }
func (k RefKey) Value() string             { return k.Host }
func (k RefKey) WithValue(v string) RefKey { return RefKey{k.Code, k.Day, v} }
func (k RefKey) Compare(o RefKey) int {
	return cmp.Or(k.Slot().Compare(o.Slot()), strings.Compare(k.Host, o.Host))
}

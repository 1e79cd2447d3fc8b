package shortener

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

// dayKey is one link's UTC day: the unit the referrer cap counts hosts in.
type dayKey struct {
	code string
	day  int64 // unix seconds, start of the UTC day
}

func (d dayKey) compare(o dayKey) int {
	return cmp.Or(strings.Compare(d.code, o.code), cmp.Compare(d.day, o.day))
}

// refKey is a referrer host's counter on a link's day, capped per day.
func (k refKey) slot() dayKey              { return dayKey{k.code, k.day} }
func (k refKey) value() string             { return k.host }
func (k refKey) withValue(v string) refKey { return refKey{k.code, k.day, v} }
func (k refKey) compare(o refKey) int {
	return cmp.Or(k.slot().compare(o.slot()), strings.Compare(k.host, o.host))
}

package shortener

import (
	"sort"
)

// OtherReferrer is the referrer row that counts, per link and day, the
// clicks of hosts past the cap (clicks_referrers), and of a host literally
// named "other". It never takes one of the cap's places.
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

// referrerDays returns the days of incs in a fixed order (code, then day),
// the order both sinks lock or write them in.
func referrerDays(incs map[refKey]int64) []dayKey {
	seen := make(map[dayKey]bool)
	var days []dayKey
	for k := range incs {
		d := dayKey{k.code, k.day}
		if !seen[d] {
			seen[d] = true
			days = append(days, d)
		}
	}
	sort.Slice(days, func(i, j int) bool {
		if days[i].code != days[j].code {
			return days[i].code < days[j].code
		}
		return days[i].day < days[j].day
	})
	return days
}

// capReferrers decides where each referrer increment of a batch goes,
// given, for each of its link-days, how many named hosts are stored
// (hosts) and which of the batch's hosts are among them (stored). A stored
// host keeps counting in its row; a new host takes a free place while the
// day has fewer than limit named hosts; any other increment goes to the
// day's OtherReferrer row. When more new hosts arrive than places are
// left, the ones with more clicks in the batch win (then the smaller
// name), so the outcome does not depend on map order. It returns the
// increments to write and, per day, how many new hosts took a place.
func capReferrers(incs map[refKey]int64, stored func(refKey) bool, hosts map[dayKey]int64, limit int) (rows map[refKey]int64, added map[dayKey]int64) {
	rows = make(map[refKey]int64, len(incs))
	added = make(map[dayKey]int64)
	fresh := make(map[dayKey][]refKey)
	for k, n := range incs {
		switch {
		case k.host == OtherReferrer:
			rows[k] += n
		case stored(k):
			rows[k] += n
		default:
			d := dayKey{k.code, k.day}
			fresh[d] = append(fresh[d], k)
		}
	}
	for d, keys := range fresh {
		sort.Slice(keys, func(i, j int) bool {
			if incs[keys[i]] != incs[keys[j]] {
				return incs[keys[i]] > incs[keys[j]]
			}
			return keys[i].host < keys[j].host
		})
		free := max(int64(limit)-hosts[d], 0)
		for i, k := range keys {
			if int64(i) < free {
				rows[k] += incs[k]
				added[d]++
				continue
			}
			rows[refKey{k.code, k.day, OtherReferrer}] += incs[k]
		}
	}
	return rows, added
}

// sortedRefKeys returns the keys of rows in (code, day, host) order.
func sortedRefKeys(rows map[refKey]int64) []refKey {
	keys := make([]refKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sortRefKeys(keys)
	return keys
}

func sortRefKeys(keys []refKey) {
	sort.Slice(keys, func(i, j int) bool {
		x, y := keys[i], keys[j]
		if x.code != y.code {
			return x.code < y.code
		}
		if x.day != y.day {
			return x.day < y.day
		}
		return x.host < y.host
	})
}

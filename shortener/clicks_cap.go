package shortener

import (
	"slices"
	"sort"
)

// cappedKey is a counter whose named values are capped per slot: a
// referrer host per link-day (refKey), a dimension value per link-day and
// dimension (dimKey). The value OtherReferrer is the slot's overflow row.
type cappedKey[K any, S any] interface {
	comparable
	slot() S              // where the cap counts named values
	value() string        // the named value
	withValue(v string) K // the same slot's key for value v
	compare(other K) int  // the fixed order rows are written in
}

// cappedSlot is a slot of capped values, with the fixed order both sinks
// lock or write slots in.
type cappedSlot[S any] interface {
	comparable
	compare(other S) int
}

// capSlots returns the slots of incs in their fixed order.
func capSlots[K cappedKey[K, S], S cappedSlot[S]](incs map[K]int64) []S {
	seen := make(map[S]bool)
	var slots []S
	for k := range incs {
		if s := k.slot(); !seen[s] {
			seen[s] = true
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, S.compare)
	return slots
}

// capValues decides where each increment of a batch goes, given, for each
// of its slots, how many named values are stored (used) and which of the
// batch's values are among them (stored). A stored value keeps counting
// in its row; a new value takes a free place while the slot has fewer
// than limit named values; any other increment goes to the slot's
// OtherReferrer row. When more new values arrive than places are left,
// the ones with more clicks in the batch win (then the smaller name), so
// the outcome does not depend on map order. It returns the increments to
// write and, per slot, how many new values took a place.
func capValues[K cappedKey[K, S], S cappedSlot[S]](incs map[K]int64, stored func(K) bool, used map[S]int64, limit int) (rows map[K]int64, added map[S]int64) {
	rows = make(map[K]int64, len(incs))
	added = make(map[S]int64)
	fresh := make(map[S][]K)
	for k, n := range incs {
		if k.value() == OtherReferrer || stored(k) {
			rows[k] += n
			continue
		}
		fresh[k.slot()] = append(fresh[k.slot()], k)
	}
	for s, keys := range fresh {
		sort.Slice(keys, func(i, j int) bool {
			if incs[keys[i]] != incs[keys[j]] {
				return incs[keys[i]] > incs[keys[j]]
			}
			return keys[i].value() < keys[j].value()
		})
		free := max(int64(limit)-used[s], 0)
		for i, k := range keys {
			if int64(i) < free {
				rows[k] += incs[k]
				added[s]++
				continue
			}
			rows[k.withValue(OtherReferrer)] += incs[k]
		}
	}
	return rows, added
}

// sortedCapKeys returns the keys of rows in their fixed order.
func sortedCapKeys[K cappedKey[K, S], S any](rows map[K]int64) []K {
	keys := make([]K, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, K.compare)
	return keys
}

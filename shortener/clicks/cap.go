package clicks

import (
	"slices"
	"sort"
)

// CappedKey is a counter whose named values are capped per slot: a
// referrer host per link-day (RefKey), a dimension value per link-day and
// dimension (DimKey). The value OtherReferrer is the slot's overflow row.
type CappedKey[K any, S any] interface {
	comparable
	Slot() S              // where the cap counts named values
	Value() string        // the named value
	WithValue(v string) K // the same slot's key for value v
	Compare(other K) int  // the fixed order rows are written in
}

// CappedSlot is a slot of capped values, with the fixed order both sinks
// lock or write slots in.
type CappedSlot[S any] interface {
	comparable
	Compare(other S) int
}

// CapSlots returns the slots of incs in their fixed order.
func CapSlots[K CappedKey[K, S], S CappedSlot[S]](incs map[K]int64) []S {
	seen := make(map[S]bool)
	var slots []S
	for k := range incs {
		if s := k.Slot(); !seen[s] {
			seen[s] = true
			slots = append(slots, s)
		}
	}
	slices.SortFunc(slots, S.Compare)
	return slots
}

// CapValues decides where each increment of a batch goes, given, for each
// of its slots, how many named values are stored (used) and which of the
// batch's values are among them (stored). A stored value keeps counting
// in its row; a new value takes a free place while the slot has fewer
// than limit named values; any other increment goes to the slot's
// OtherReferrer row. When more new values arrive than places are left,
// the ones with more clicks in the batch win (then the smaller name), so
// the outcome does not depend on map order. It returns the increments to
// write and, per slot, how many new values took a place.
func CapValues[K CappedKey[K, S], S CappedSlot[S]](incs map[K]int64, stored func(K) bool, used map[S]int64, limit int) (rows map[K]int64, added map[S]int64) {
	rows = make(map[K]int64, len(incs))
	added = make(map[S]int64)
	fresh := make(map[S][]K)
	for k, n := range incs {
		if k.Value() == OtherReferrer || stored(k) {
			rows[k] += n
			continue
		}
		fresh[k.Slot()] = append(fresh[k.Slot()], k)
	}
	for s, keys := range fresh {
		sort.Slice(keys, func(i, j int) bool {
			if incs[keys[i]] != incs[keys[j]] {
				return incs[keys[i]] > incs[keys[j]]
			}
			return keys[i].Value() < keys[j].Value()
		})
		free := max(int64(limit)-used[s], 0)
		for i, k := range keys {
			if int64(i) < free {
				rows[k] += incs[k]
				added[s]++
				continue
			}
			rows[k.WithValue(OtherReferrer)] += incs[k]
		}
	}
	return rows, added
}

// SortedCapKeys returns the keys of rows in their fixed order.
func SortedCapKeys[K CappedKey[K, S], S any](rows map[K]int64) []K {
	keys := make([]K, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, K.Compare)
	return keys
}

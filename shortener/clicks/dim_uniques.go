package clicks

import (
	"slices"
)

// UniqueDims are the dimensions whose values keep a visitor sketch per
// link and UTC day besides their clicks: a breakdown by one of them on a
// link's stats gives each value's uniques (the dashboard's variants side
// by side). The others count clicks only.
var UniqueDims = [...]string{DimRule, DimVariant}

// HasUniques reports whether dim is one of UniqueDims.
func HasUniques(dim string) bool {
	return slices.Contains(UniqueDims[:], dim)
}

// addDims counts click c, of the UTC day starting at day, under each of
// its dimension values, and its visitor under those of UniqueDims when c
// is a person with a known visitor (as Visitors counts them).
func (a ClickAggregate) addDims(c Click, day int64) {
	person := !c.Bot() && c.Visitor != 0
	for i, v := range ClickDims(c) {
		if v == "" { // a click without a rule or variant
			continue
		}
		k := DimKey{c.Code, day, ClickDimensions[i], v}
		a.Dims[k]++
		if person && HasUniques(k.Dim) {
			a.DimVisitors[k] = append(a.DimVisitors[k], c.Visitor)
		}
	}
}

// PlaceDimVisitors moves each value's visitors to the row its clicks went
// to under the cap, given the counter rows a sink wrote for the same
// batch (CapValues' rows): a value without a row of its own took no
// place, its visitors go to its slot's OtherReferrer sketch. The keys
// come back in their fixed order, the order sinks write them in.
func PlaceDimVisitors(vis map[DimKey][]uint64, rows map[DimKey]int64) (map[DimKey][]uint64, []DimKey) {
	placed := make(map[DimKey][]uint64, len(vis))
	for k, hashes := range vis {
		if _, ok := rows[k]; !ok {
			k = k.WithValue(OtherReferrer)
		}
		placed[k] = append(placed[k], hashes...)
	}
	keys := make([]DimKey, 0, len(placed))
	for k := range placed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, DimKey.Compare)
	return placed, keys
}

// WithDimUniques sets each entry's Uniques to the merge of its value's
// sketches (values: the stored sketches by value over the window's
// days); an entry without one has 0 uniques (bots only, or people
// without a known visitor).
func WithDimUniques(entries []BreakdownEntry, values map[string][][]byte) {
	for i := range entries {
		n := MergeVisitors(values[entries[i].Value])
		entries[i].Uniques = &n
	}
}

package clicks

import (
	"slices"
	"testing"
	"time"
)

// AggregateClicks keeps the visitors of people per rule and variant
// value and day: bots, unknown visitors and clicks without a rule or
// variant add none, other dimensions keep no visitors; PlaceDimVisitors
// moves a value past the cap to its slot's other sketch, and
// WithDimUniques counts distinct visitors once.
func TestAggregateDimVisitors(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	day := at.Truncate(24 * time.Hour).Unix()
	click := func(variant string, visitor uint64, class UAClass, at time.Time) Click {
		return Click{Code: "ab", At: at, Class: class, Rule: "r", Variant: variant, Visitor: visitor}
	}
	a := AggregateClicks([]Batch{{ID: "1", Clicks: []Click{
		click("a", 1, ClassBrowser, at), click("a", 1, ClassBrowser, at), click("a", 2, ClassBrowser, at),
		click("b", 3, ClassBrowser, at), click("b", 4, ClassBot, at), click("b", 0, ClassBrowser, at),
		click("", 5, ClassBrowser, at), click("a", 6, ClassBrowser, at.Add(24*time.Hour)),
	}}})
	want := map[DimKey][]uint64{
		{"ab", day, DimVariant, "a"}:         {1, 1, 2},
		{"ab", day, DimVariant, "b"}:         {3},
		{"ab", day, DimRule, "r"}:            {1, 1, 2, 3, 5},
		{"ab", day + 86400, DimVariant, "a"}: {6},
		{"ab", day + 86400, DimRule, "r"}:    {6},
	}
	if len(a.DimVisitors) != len(want) {
		t.Errorf("DimVisitors = %v, want %v", a.DimVisitors, want)
	}
	for k, w := range want {
		if got := a.DimVisitors[k]; !slices.Equal(got, w) {
			t.Errorf("DimVisitors[%v] = %v, want %v", k, got, w)
		}
	}
	if n := a.Dims[DimKey{"ab", day, DimVariant, "b"}]; n != 3 {
		t.Errorf("variant b clicks = %d, want 3 (bots and unknown visitors count as clicks)", n)
	}

	va, vb := DimKey{"ab", day, DimVariant, "a"}, DimKey{"ab", day, DimVariant, "b"}
	placed, keys := PlaceDimVisitors(map[DimKey][]uint64{va: {1, 2}, vb: {3}}, map[DimKey]int64{va: 2, va.WithValue(OtherReferrer): 1})
	if other := va.WithValue(OtherReferrer); !slices.Equal(keys, []DimKey{va, other}) || !slices.Equal(placed[other], []uint64{3}) {
		t.Errorf("PlaceDimVisitors = %v %v, want b's visitor under %q", placed, keys, OtherReferrer)
	}

	sa, _ := AddVisitors(nil, []uint64{1, 1, 2})
	sa2, _ := AddVisitors(nil, []uint64{2, 7})
	entries := []BreakdownEntry{{Value: "a", Clicks: 5}, {Value: "b", Clicks: 1}}
	WithDimUniques(entries, map[string][][]byte{"a": {sa, sa2}})
	if entries[0].Uniques == nil || *entries[0].Uniques != 3 || entries[1].Uniques == nil || *entries[1].Uniques != 0 {
		t.Errorf("WithDimUniques = %+v, want a 3 and b 0", entries)
	}
	if !HasUniques(DimRule) || !HasUniques(DimVariant) || HasUniques(DimCountry) || HasUniques(DimReferrer) {
		t.Error("HasUniques: want rule and variant only")
	}
}

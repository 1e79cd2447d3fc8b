package clicks

import (
	"strings"
	"testing"
	"time"
)

// A click's rule and variant travel through the stream and count as
// dimensions; a click without them adds no rule or variant value; lines
// of the version before them still decode; names past their bounds or
// with control characters are refused.
func TestClickRuleVariant(t *testing.T) {
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	with := Click{Code: "abc", At: at, Class: ClassBrowser, Rule: "iPhone users ✓", Variant: "b"}
	without := Click{Code: "abc", At: at, Class: ClassBrowser}
	got, err := DecodeClicks(EncodeClicks([]Click{with, without}))
	if err != nil || len(got) != 2 || got[0].Rule != with.Rule || got[0].Variant != "b" || got[1].Rule != "" {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	old := "abc\t1796551200000\t0\t\t\t\t\t\t\t\t\t\n" // 12 fields: the version before rules
	if got, err := DecodeClicks(old); err != nil || len(got) != 1 || got[0].Rule != "" {
		t.Errorf("a 12-field line = %+v, %v", got, err)
	}
	dims := ClickDims(with)
	if dims[len(dims)-2] != "iPhone users ✓" || dims[len(dims)-1] != "b" {
		t.Errorf("ClickDims rule, variant = %q, %q", dims[len(dims)-2], dims[len(dims)-1])
	}
	a := AggregateClicks([]Batch{{ID: "b", Clicks: []Click{with, without}}})
	for k := range a.Dims {
		if (k.Dim == DimRule || k.Dim == DimVariant) && k.Val == "" {
			t.Errorf("a click without a rule counted under %s %q", k.Dim, k.Val)
		}
	}
	if a.Dims[DimKey{"abc", at.Truncate(24 * time.Hour).Unix(), DimRule, "iPhone users ✓"}] != 1 {
		t.Errorf("rule dims = %v, want one click under the rule", a.Dims)
	}
	for name, c := range map[string]Click{
		"rule too long":     {Rule: strings.Repeat("é", maxRuleDim/2+1)},
		"variant too long":  {Variant: strings.Repeat("v", maxVariantDim+1)},
		"tab in a rule":     {Rule: "a\tb"},
		"line in a variant": {Variant: "a\nb"},
		"not UTF-8":         {Rule: "\xff"},
	} {
		c.Code, c.At = "abc", at
		if ClickSize(c) != -1 {
			t.Errorf("%s: ClickSize = %d, want -1 (refused)", name, ClickSize(c))
		}
	}
	if ClickSize(with) <= ClickSize(without) || WireBytes(with) <= WireBytes(without) {
		t.Error("the rule and variant names are not counted in the click's size")
	}
}

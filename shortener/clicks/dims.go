package clicks

import (
	"cmp"
	"strings"
)

// Dimensions of a click counted per link per UTC day, each value with its
// clicks (people and bots), capped like referrer hosts: clicks_referrers
// named values per link, day and dimension, the clicks of further values
// under OtherReferrer.
const (
	DimCountry = "country"
	DimRegion  = "region"
	DimCity    = "city"
	DimDevice  = "device"
	DimOS      = "os"
	DimBrowser = "browser"
	// DimSource tells scans of the link's QR code (SourceQR) from other
	// clicks (SourceLink).
	DimSource = "source"
	// DimReferrer groups by referrer host: the referrer rollups, which
	// count the clicks that had a Referer only.
	DimReferrer = "referrer"
	// DimRule and DimVariant group by the destination rule that matched
	// and the A/B variant chosen: only the clicks that had one count.
	DimRule    = "rule"
	DimVariant = "variant"
)

// ClickDimensions are the stored dimensions, in the order of ClickDims.
var ClickDimensions = [...]string{DimCountry, DimRegion, DimCity, DimDevice, DimOS, DimBrowser, DimSource, DimRule, DimVariant}

// Values of DimSource.
const (
	SourceQR   = "qr"
	SourceLink = "link"
)

// validGroupBy reports whether dim can be grouped by: a stored dimension
// or DimReferrer.
func validGroupBy(dim string) bool {
	return dim == DimReferrer || clickDimIndex(dim) >= 0
}

func clickDimIndex(dim string) int {
	for i, d := range ClickDimensions {
		if d == dim {
			return i
		}
	}
	return -1
}

// ClickDims returns the values a click is counted under, in the order of
// ClickDimensions: a value not derived ("") counts as UnknownDim, one that
// fails its check (never from the writer) as OtherReferrer, so no client
// can grow a dimension past its cap with text of its own. Rule and
// variant are "" (not counted) for a click that had none.
func ClickDims(c Click) [len(ClickDimensions)]string {
	pick := func(v string, ok bool) string {
		switch {
		case v == "":
			return UnknownDim
		case !ok:
			return OtherReferrer
		}
		return v
	}
	return [...]string{
		pick(c.Country, ValidCountry(c.Country)),
		pick(c.Region, validRegion(c.Region)),
		pick(c.City, ValidCity(c.City)),
		pick(c.Device, validDim(c.Device)),
		pick(c.OS, validDim(c.OS)),
		pick(c.Browser, validDim(c.Browser)),
		ClickSourceDim(c.QR),
		targetDim(c.Rule, maxRuleDim),
		targetDim(c.Variant, maxVariantDim),
	}
}

// targetDim is a rule or variant name as a dimension value: "" (not
// counted) for none, OtherReferrer past its bound.
func targetDim(v string, max int) string {
	if !validTargetDim(v, max) {
		return OtherReferrer
	}
	return v
}

func ClickSourceDim(qr bool) string {
	if qr {
		return SourceQR
	}
	return SourceLink
}

// DimDay is one link's UTC day in one dimension: the slot the cap counts
// named values in.
type DimDay struct {
	Code string
	Day  int64 // unix seconds, start of the UTC day
	Dim  string
}

func (d DimDay) Compare(o DimDay) int {
	return cmp.Or(strings.Compare(d.Code, o.Code), cmp.Compare(d.Day, o.Day), strings.Compare(d.Dim, o.Dim))
}

// DimKey is the counter of one dimension value on a link's day.
type DimKey struct {
	Code string
	Day  int64
	Dim  string
	Val  string
}

func (k DimKey) Slot() DimDay              { return DimDay{k.Code, k.Day, k.Dim} }
func (k DimKey) Value() string             { return k.Val }
func (k DimKey) WithValue(v string) DimKey { return DimKey{k.Code, k.Day, k.Dim, v} }
func (k DimKey) Compare(o DimKey) int {
	return cmp.Or(k.Slot().Compare(o.Slot()), strings.Compare(k.Val, o.Val))
}

// BreakdownEntry is one value of a breakdown and its clicks over a range.
type BreakdownEntry struct {
	Value  string `json:"value"`
	Clicks int64  `json:"clicks"`
	// Uniques estimates the distinct visitors (people, not bots, with a
	// known visitor) counted under the value over the UTC days overlapping
	// the range, as Stats.Uniques does for the link: one day's visitors,
	// over several days visitor-days; exact while small. Only a link's
	// breakdown by rule or variant (UniqueDims) has it; other dimensions
	// and the overview across links (GET <api>/stats) leave it out.
	Uniques *int64 `json:"uniques,omitempty"`
}

// Bounds of the breakdown's `limit` parameter: entries listed.
const (
	DefaultBreakdownLimit = 10
	MaxBreakdownLimit     = 1000
)

package shortener

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
)

// clickDimensions are the stored dimensions, in the order of clickDims.
var clickDimensions = [...]string{DimCountry, DimRegion, DimCity, DimDevice, DimOS, DimBrowser, DimSource}

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
	for i, d := range clickDimensions {
		if d == dim {
			return i
		}
	}
	return -1
}

// clickDims returns the values a click is counted under, in the order of
// clickDimensions: a value not derived ("") counts as UnknownDim, one that
// fails its check (never from the writer) as OtherReferrer, so no client
// can grow a dimension past its cap with text of its own.
func clickDims(c Click) [len(clickDimensions)]string {
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
		pick(c.Country, validCountry(c.Country)),
		pick(c.Region, validRegion(c.Region)),
		pick(c.City, validCity(c.City)),
		pick(c.Device, validDim(c.Device)),
		pick(c.OS, validDim(c.OS)),
		pick(c.Browser, validDim(c.Browser)),
		clickSourceDim(c.QR),
	}
}

func clickSourceDim(qr bool) string {
	if qr {
		return SourceQR
	}
	return SourceLink
}

// dimDay is one link's UTC day in one dimension: the slot the cap counts
// named values in.
type dimDay struct {
	code string
	day  int64 // unix seconds, start of the UTC day
	dim  string
}

func (d dimDay) compare(o dimDay) int {
	return cmp.Or(strings.Compare(d.code, o.code), cmp.Compare(d.day, o.day), strings.Compare(d.dim, o.dim))
}

// dimKey is the counter of one dimension value on a link's day.
type dimKey struct {
	code string
	day  int64
	dim  string
	val  string
}

func (k dimKey) slot() dimDay              { return dimDay{k.code, k.day, k.dim} }
func (k dimKey) value() string             { return k.val }
func (k dimKey) withValue(v string) dimKey { return dimKey{k.code, k.day, k.dim, v} }
func (k dimKey) compare(o dimKey) int {
	return cmp.Or(k.slot().compare(o.slot()), strings.Compare(k.val, o.val))
}

// BreakdownEntry is one value of a breakdown and its clicks over a range.
type BreakdownEntry struct {
	Value  string `json:"value"`
	Clicks int64  `json:"clicks"`
}

// Bounds of the breakdown's `limit` parameter: entries listed.
const (
	DefaultBreakdownLimit = 10
	MaxBreakdownLimit     = 1000
)

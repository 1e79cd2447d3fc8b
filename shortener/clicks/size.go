package clicks

import (
	"unicode/utf8"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// Sizes of click records. A click held in process (buffered or in the
// writer's batches) is counted as clickHeldFixed bytes (the Click value in
// the buffer) plus its code, referrer and user agent. Encoded (a stream
// entry, a sink's batch) its address and user agent are gone: it counts
// clickFixedSize bytes (the encoded time, class and separators take at
// most 25) plus its code and referrer. No click counts more than
// MaxHeldSize bytes in memory nor MaxClickSize bytes encoded.
const (
	clickHeldFixed = 128
	clickFixedSize = 64
	// MaxReferrerHost is the longest referrer host kept (a DNS name's
	// Limit); ReferrerHost gives "" for longer ones.
	MaxReferrerHost = 253
	// MaxUserAgent is the most of a User-Agent a click holds: its first
	// 512 bytes (ClassifyRequest cuts longer ones).
	MaxUserAgent = 512
	// MaxDimLen bounds a derived dimension value (device, OS, browser).
	MaxDimLen = 32
	// maxCountryLen, maxRegionLen and maxCityLen bound a click's country,
	// region code and city name (bytes of UTF-8).
	maxCountryLen = 7 // UnknownDim
	maxRegionLen  = 8
	maxCityLen    = 64
	maxGeoSize    = 3 + maxCountryLen + maxRegionLen + maxCityLen + 3 // and the source
	// maxRuleDim and maxVariantDim bound a click's rule (64 printable
	// characters) and variant names in bytes.
	maxRuleDim    = 256
	maxVariantDim = 32
	MaxClickSize  = clickFixedSize + link.MaxCustomCodeLen + MaxReferrerHost + 3*(MaxDimLen+1) + maxGeoSize +
		2 + maxRuleDim + maxVariantDim
	MaxHeldSize = clickHeldFixed + link.MaxCustomCodeLen + MaxReferrerHost + MaxUserAgent
	// MaxBatchBytes bounds a batch (one stream entry, one transaction's
	// clicks) in encoded bytes: a batch is sealed at batch size clicks or
	// at this size, whichever comes first (500 typical clicks take about
	// 45 KiB).
	MaxBatchBytes = 64 << 10
)

// ClickSize returns the bytes a click held in process is counted for, or
// -1 when its code, referrer or user agent is out of bounds (such a click
// is dropped as invalid: its encoding could not be decoded, or it would be
// held or stored unbounded).
func ClickSize(c Click) int64 {
	if !link.ValidKey(c.Code) || !ValidReferrerHost(c.Referrer) || c.Class > ClassOther || len(c.UA) > MaxUserAgent ||
		!validDim(c.Device) || !validDim(c.OS) || !validDim(c.Browser) || !validGeo(c) || !validTargetDims(c) {
		return -1
	}
	return heldBytes(c)
}

// heldBytes is ClickSize of a click known to be valid.
func heldBytes(c Click) int64 {
	return int64(clickHeldFixed + len(c.Code) + len(c.Referrer) + len(c.UA) + len(c.Rule) + len(c.Variant))
}

// WireBytes is the encoded size a valid click is counted for.
func WireBytes(c Click) int64 {
	return int64(clickFixedSize + len(c.Code) + len(c.Referrer) + 3 + len(c.Device) + len(c.OS) + len(c.Browser) +
		3 + len(c.Country) + len(c.Region) + len(c.City) + 3 + 2 + len(c.Rule) + len(c.Variant))
}

// validTargetDims reports whether a click's rule and variant names can be
// kept: "" or valid UTF-8 within their bounds, without control characters
// (a tab or a line break would split the stream's line).
func validTargetDims(c Click) bool {
	return validTargetDim(c.Rule, maxRuleDim) && validTargetDim(c.Variant, maxVariantDim)
}

func validTargetDim(s string, max int) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// validDim reports whether d can be a derived dimension value: "" (not
// derived) or at most MaxDimLen bytes of lowercase letters, digits,
// spaces and '-', as uaParser gives them.
func validDim(d string) bool {
	if len(d) > MaxDimLen {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == ' ' || c == '-') {
			return false
		}
	}
	return true
}

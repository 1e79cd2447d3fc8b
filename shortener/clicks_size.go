package shortener

// Sizes of click records. A click is counted as clickFixedSize bytes (the
// Click value held in the buffer; it also covers the encoded time, class
// and separators, at most 25 bytes) plus its code and referrer, so no
// click counts more than maxClickSize bytes, in memory or encoded.
const (
	clickFixedSize = 64
	// MaxReferrerHost is the longest referrer host kept (a DNS name's
	// limit); ReferrerHost gives "" for longer ones.
	MaxReferrerHost = 253
	maxClickSize    = clickFixedSize + MaxCustomCodeLen + MaxReferrerHost
	// maxBatchBytes bounds a batch (one stream entry, one transaction's
	// clicks) in bytes: a batch is sealed at batch size clicks or at this
	// size, whichever comes first (500 typical clicks take about 45 KiB).
	maxBatchBytes = 64 << 10
)

// clickSize returns the bytes a click is counted for, or -1 when its code
// or referrer is out of bounds (such a click is dropped as invalid: its
// encoding could not be decoded, or it would be stored unbounded).
func clickSize(c Click) int64 {
	if !ValidLookupCode(c.Code) || !validReferrerHost(c.Referrer) || c.Class > ClassOther {
		return -1
	}
	return int64(clickFixedSize + len(c.Code) + len(c.Referrer))
}

// clickBytes is clickSize of a click known to be valid.
func clickBytes(c Click) int64 { return int64(clickFixedSize + len(c.Code) + len(c.Referrer)) }

func batchBytes(clicks []Click) (n int64) {
	for _, c := range clicks {
		n += clickBytes(c)
	}
	return n
}

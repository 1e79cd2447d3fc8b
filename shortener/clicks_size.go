package shortener

// Sizes of click records. A click held in process (buffered or in the
// writer's batches) is counted as clickHeldFixed bytes (the Click value in
// the buffer) plus its code, referrer and user agent. Encoded (a stream
// entry, a sink's batch) its address and user agent are gone: it counts
// clickFixedSize bytes (the encoded time, class and separators take at
// most 25) plus its code and referrer. No click counts more than
// maxHeldSize bytes in memory nor maxClickSize bytes encoded.
const (
	clickHeldFixed = 128
	clickFixedSize = 64
	// MaxReferrerHost is the longest referrer host kept (a DNS name's
	// limit); ReferrerHost gives "" for longer ones.
	MaxReferrerHost = 253
	// MaxUserAgent is the most of a User-Agent a click holds: its first
	// 512 bytes (ClassifyRequest cuts longer ones).
	MaxUserAgent = 512
	maxClickSize = clickFixedSize + MaxCustomCodeLen + MaxReferrerHost
	maxHeldSize  = clickHeldFixed + MaxCustomCodeLen + MaxReferrerHost + MaxUserAgent
	// maxBatchBytes bounds a batch (one stream entry, one transaction's
	// clicks) in encoded bytes: a batch is sealed at batch size clicks or
	// at this size, whichever comes first (500 typical clicks take about
	// 45 KiB).
	maxBatchBytes = 64 << 10
)

// clickSize returns the bytes a click held in process is counted for, or
// -1 when its code, referrer or user agent is out of bounds (such a click
// is dropped as invalid: its encoding could not be decoded, or it would be
// held or stored unbounded).
func clickSize(c Click) int64 {
	if !ValidLookupCode(c.Code) || !validReferrerHost(c.Referrer) || c.Class > ClassOther || len(c.UA) > MaxUserAgent {
		return -1
	}
	return heldBytes(c)
}

// heldBytes is clickSize of a click known to be valid.
func heldBytes(c Click) int64 {
	return int64(clickHeldFixed + len(c.Code) + len(c.Referrer) + len(c.UA))
}

// wireBytes is the encoded size a valid click is counted for.
func wireBytes(c Click) int64 { return int64(clickFixedSize + len(c.Code) + len(c.Referrer)) }

package shortener

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// Bounds of the click settings that size memory, Redis and the store.
const (
	MinClicksBufferBytes = maxBatchBytes     // one batch
	MaxClicksBufferBytes = 1 << 30           // 1 GiB
	MinClicksStreamBytes = 4 * maxBatchBytes // four batches
	MaxClicksStreamBytes = 64 << 30          // 64 GiB
	MinClicksRetention   = 24 * time.Hour
	MaxClicksRetention   = 100 * 365 * 24 * time.Hour
)

// setClickDefaults fills the click settings left at zero: those the
// recorder has from ClickConfig's defaults, referrers and retention (which
// only the handler defaults; 0 means "never pruned" to a ClickRecorder)
// here.
func (h *Handler) setClickDefaults() {
	cfg := h.clickConfig()
	cfg.setTuningDefaults()
	h.ClicksBuffer, h.ClicksBatch, h.ClicksInterval = cfg.Buffer, cfg.BatchSize, caddy.Duration(cfg.BatchInterval)
	h.ClicksStreamMaxLen, h.ClicksBufferBytes, h.ClicksStreamBytes = cfg.StreamMaxLen, cfg.BufferBytes, cfg.StreamMaxBytes
	if h.ClicksReferrers == 0 {
		h.ClicksReferrers = DefaultClicksReferrers
	}
	if h.ClicksRetention == 0 {
		h.ClicksRetention = caddy.Duration(DefaultClicksRetention)
	}
}

// clickConfig is the recorder configuration of the handler's click
// settings, without sink, Redis, metrics or logger.
func (h *Handler) clickConfig() ClickConfig {
	return ClickConfig{
		Buffer:         h.ClicksBuffer,
		BatchSize:      h.ClicksBatch,
		BatchInterval:  time.Duration(h.ClicksInterval),
		StreamMaxLen:   h.ClicksStreamMaxLen,
		BufferBytes:    h.ClicksBufferBytes,
		StreamMaxBytes: h.ClicksStreamBytes,
		Retention:      time.Duration(h.ClicksRetention),
	}
}

// validateClicks judges the click settings (0 stands for the default).
func (h *Handler) validateClicks() error {
	if h.ClicksBuffer < 0 || h.ClicksBatch < 0 || h.ClicksInterval < 0 || h.ClicksStreamMaxLen < 0 {
		return fmt.Errorf("shortener: clicks_buffer, clicks_batch (size and interval) and clicks_stream_maxlen must not be negative")
	}
	for _, err := range []error{
		checkClicksBytes("clicks_buffer_bytes", h.ClicksBufferBytes, MinClicksBufferBytes, MaxClicksBufferBytes),
		checkClicksBytes("clicks_stream_bytes", h.ClicksStreamBytes, MinClicksStreamBytes, MaxClicksStreamBytes),
		checkClicksReferrers(h.ClicksReferrers),
		checkClicksRetention(time.Duration(h.ClicksRetention)),
	} {
		if err != nil {
			return fmt.Errorf("shortener: %w", err)
		}
	}
	return nil
}

func checkClicksBytes(field string, n, lo, hi int64) error {
	if n != 0 && (n < lo || n > hi) {
		return fmt.Errorf("invalid %s %d: want %d to %d bytes", field, n, lo, hi)
	}
	return nil
}

func checkClicksReferrers(n int) error {
	if n != 0 && (n < MinClicksReferrers || n > MaxClicksReferrers) {
		return fmt.Errorf("invalid clicks_referrers %d: want %d to %d", n, MinClicksReferrers, MaxClicksReferrers)
	}
	return nil
}

func checkClicksRetention(d time.Duration) error {
	if d != 0 && (d < MinClicksRetention || d > MaxClicksRetention) {
		return fmt.Errorf("invalid clicks_retention %s: want 1d to 36500d", d)
	}
	return nil
}

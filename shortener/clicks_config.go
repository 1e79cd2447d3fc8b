package shortener

import (
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
// here, and the hourly retention (at most the retention).
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
	if h.ClicksHourlyRetention == 0 {
		h.ClicksHourlyRetention = min(caddy.Duration(DefaultClicksHourlyRetention), h.ClicksRetention)
	}
}

// clickConfig is the recorder configuration of the handler's click
// settings, without sink, Redis, metrics or logger.
func (h *Handler) clickConfig() ClickConfig {
	return ClickConfig{
		Buffer:          h.ClicksBuffer,
		BatchSize:       h.ClicksBatch,
		BatchInterval:   time.Duration(h.ClicksInterval),
		StreamMaxLen:    h.ClicksStreamMaxLen,
		BufferBytes:     h.ClicksBufferBytes,
		StreamMaxBytes:  h.ClicksStreamBytes,
		Retention:       time.Duration(h.ClicksRetention),
		HourlyRetention: time.Duration(h.ClicksHourlyRetention),
	}
}

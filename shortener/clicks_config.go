package shortener

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/shortener/clicks"
)

// Bounds of the click settings that size memory, Redis and the store.
const (
	MinClicksBufferBytes = clicks.MaxBatchBytes     // one batch
	MaxClicksBufferBytes = 1 << 30                  // 1 GiB
	MinClicksStreamBytes = 4 * clicks.MaxBatchBytes // four batches
	MaxClicksStreamBytes = 64 << 30                 // 64 GiB
	MinClicksRetention   = 24 * time.Hour
	MaxClicksRetention   = 100 * 365 * 24 * time.Hour
)

// setClickDefaults fills the click settings left at zero: those the
// recorder has from Config's defaults, referrers and retention (which
// only the handler defaults; 0 means "never pruned" to a Recorder)
// here, and the hourly retention (at most the retention).
func (h *Handler) setClickDefaults() {
	cfg := h.clickConfig()
	cfg.SetTuningDefaults()
	h.ClicksBuffer, h.ClicksBatch, h.ClicksInterval = cfg.Buffer, cfg.BatchSize, caddy.Duration(cfg.BatchInterval)
	h.ClicksStreamMaxLen, h.ClicksBufferBytes, h.ClicksStreamBytes = cfg.StreamMaxLen, cfg.BufferBytes, cfg.StreamMaxBytes
	if h.ClicksReferrers == 0 {
		h.ClicksReferrers = clicks.DefaultClicksReferrers
	}
	if h.ClicksRetention == 0 {
		h.ClicksRetention = caddy.Duration(clicks.DefaultClicksRetention)
	}
	if h.ClicksHourlyRetention == 0 {
		h.ClicksHourlyRetention = min(caddy.Duration(clicks.DefaultClicksHourlyRetention), h.ClicksRetention)
	}
}

// clickConfig is the recorder configuration of the handler's click
// settings, without sink, Redis, metrics or logger.
func (h *Handler) clickConfig() clicks.Config {
	return clicks.Config{
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

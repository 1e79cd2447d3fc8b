package clicks

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Why a click was not counted: the reason label of
// caddy_shortener_clicks_dropped_total. The set is closed.
const (
	// DropBufferFull: the in-process buffer was full, in clicks or in bytes.
	DropBufferFull = "buffer_full"
	// DropInvalid: a click whose code or referrer is out of bounds (longer
	// than 64 / 253 bytes, or bytes no code or host has); the redirect
	// path never makes one, a program calling Record might.
	DropInvalid = "invalid"
	// dropShutdown: buffered clicks a shutdown could not flush in time.
	dropShutdown = "shutdown"
	// DropStreamTrimmed: clicks of stream entries trimmed before any
	// consumer counted them (the stream was at its byte or entry cap).
	DropStreamTrimmed = "stream_trimmed"
	// DropMalformed: clicks of a stream entry no consumer could decode.
	DropMalformed = "malformed"
)

var dropReasons = [...]string{DropBufferFull, DropInvalid, dropShutdown, DropStreamTrimmed, DropMalformed}

// clickMetrics are the click pipeline's collectors. Several handlers (and
// the configs of a reload) share them through the registry; the gauges are
// moved by deltas so each recorder adds only its own share.
type clickMetrics struct {
	dropped       *prometheus.CounterVec
	buffered      prometheus.Gauge
	bufferedBytes prometheus.Gauge
	gauges        *pipelineGauges // read per scrape: stream, lag, GeoIP
}

func newClickMetrics(reg prometheus.Registerer) (*clickMetrics, error) {
	m := &clickMetrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "caddy",
			Subsystem: "shortener",
			Name:      "clicks_dropped_total",
			Help:      "Clicks not counted, by reason: buffer_full, invalid, shutdown, stream_trimmed, malformed.",
		}, []string{"reason"}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "caddy",
			Subsystem: "shortener",
			Name:      "clicks_buffered",
			Help:      "Clicks held in process (buffered or being flushed): what a crash of this process would lose.",
		}),
		bufferedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "caddy",
			Subsystem: "shortener",
			Name:      "clicks_buffered_bytes",
			Help:      "Bytes of the clicks held in process, as clicks_buffer_bytes counts them.",
		}),
	}
	m.gauges = newPipelineGauges()
	if reg == nil {
		return m, nil
	}
	var err error
	if m.gauges, err = registerOnce(reg, m.gauges); err != nil {
		return nil, err
	}
	if m.dropped, err = registerOnce(reg, m.dropped); err != nil {
		return nil, err
	}
	if m.buffered, err = registerOnce(reg, m.buffered); err != nil {
		return nil, err
	}
	if m.bufferedBytes, err = registerOnce(reg, m.bufferedBytes); err != nil {
		return nil, err
	}
	for _, r := range dropReasons {
		m.dropped.WithLabelValues(r) // every reason shows, at 0
	}
	return m, nil
}

// registerOnce is register for any Registerer: the collector already
// registered under the same description is returned instead of c.
func registerOnce[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering click metrics: %w", err)
}

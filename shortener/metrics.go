package shortener

import (
	"time"

	"github.com/edgekit/caddy-edgekit/internal/promreg"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgekit/caddy-edgekit/shortener/webhook"
)

// Where a redirect decision came from, and what it was. Both label sets are
// closed: a code never becomes a label.
const (
	sourceLocal = "local"
	sourceRedis = "redis"
	sourceStore = "store"
	sourceNone  = "none" // invalid codes and store failures

	resultFound    = "found"
	resultNotFound = "not_found"
	resultGone     = "gone"
	resultInvalid  = "invalid"
	resultError    = "error"
)

// metrics are the handler's collectors on Caddy's registry.
type metrics struct {
	redirects *prometheus.CounterVec
	retries   prometheus.Counter

	// Pre-resolved children of redirects for the hot path (no label lookup
	// per request).
	foundLocal, foundRedis, foundStore prometheus.Counter
	notFoundFilter                     prometheus.Counter // an unknown code the code filter answered
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	redirects := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "shortener",
		Name:      "redirects_total",
		Help:      "Short link lookups by where the answer came from (local, redis, store, filter: an unknown code the code filter answered, none) and result (found, not_found, gone, invalid, error).",
	}, []string{"source", "result"})
	retries := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "shortener",
		Name:      "code_retries_total",
		Help:      "Random codes that were already taken and had to be drawn again; a rising rate means the keyspace is filling.",
	})
	if reg != nil {
		var err error
		if redirects, err = promreg.Register(reg, redirects); err != nil {
			return nil, err
		}
		if retries, err = promreg.Register(reg, retries); err != nil {
			return nil, err
		}
	}
	return &metrics{
		redirects:  redirects,
		retries:    retries,
		foundLocal: redirects.WithLabelValues(sourceLocal, resultFound),
		foundRedis: redirects.WithLabelValues(sourceRedis, resultFound),
		foundStore: redirects.WithLabelValues(sourceStore, resultFound),

		notFoundFilter: redirects.WithLabelValues(sourceFilter, resultNotFound),
	}, nil
}

func (m *metrics) count(source, result string) {
	m.redirects.WithLabelValues(source, result).Inc()
}

// webhookMetrics are the collectors of webhook delivery.
type webhookMetrics struct {
	attempts   *prometheus.CounterVec
	errors     prometheus.Counter
	pending    prometheus.Gauge
	pendingAge prometheus.Gauge
	events     prometheus.Gauge
	eventsAge  prometheus.Gauge
}

func newWebhookMetrics(reg *prometheus.Registry) (*webhookMetrics, error) {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "caddy", Subsystem: "shortener", Name: name, Help: help}
	}
	m := &webhookMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts(opts("webhook_attempts_total",
			"Webhook delivery attempts by outcome: delivered (2xx), retry, throttle (429, 502, 504), disable (410 Gone).")), []string{"outcome"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts(opts("webhook_errors_total",
			"Failures of webhook delivery's own work: the store unreachable, a lost lease."))),
		pending: prometheus.NewGauge(prometheus.GaugeOpts(opts("webhook_pending_messages",
			"Webhook messages waiting for an attempt, every endpoint."))),
		pendingAge: prometheus.NewGauge(prometheus.GaugeOpts(opts("webhook_pending_age_seconds",
			"Age of the oldest pending webhook message (0 for none): how far behind delivery is."))),
		events: prometheus.NewGauge(prometheus.GaugeOpts(opts("webhook_outbox_events",
			"Events kept in the outbox (PostgreSQL: the planner's estimate), bounded by the webhooks retention."))),
		eventsAge: prometheus.NewGauge(prometheus.GaugeOpts(opts("webhook_outbox_age_seconds",
			"Age of the oldest event kept in the outbox (0 for none)."))),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.attempts, err = promreg.Register(reg, m.attempts); err != nil {
		return nil, err
	}
	if m.errors, err = promreg.Register(reg, m.errors); err != nil {
		return nil, err
	}
	for _, g := range []*prometheus.Gauge{&m.pending, &m.pendingAge, &m.events, &m.eventsAge} {
		if *g, err = promreg.Register(reg, *g); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe sets the gauges from a store's backlog at now.
func (m *webhookMetrics) observe(b webhook.Backlog, now time.Time) {
	age := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return max(now.Sub(t).Seconds(), 0)
	}
	m.pending.Set(float64(b.Pending))
	m.pendingAge.Set(age(b.OldestPending))
	m.events.Set(float64(b.Events))
	m.eventsAge.Set(age(b.OldestEvent))
}

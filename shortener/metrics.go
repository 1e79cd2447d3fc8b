package shortener

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
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
		if redirects, err = register(reg, redirects); err != nil {
			return nil, err
		}
		if retries, err = register(reg, retries); err != nil {
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

// register adds c to reg, or returns the collector already registered under
// the same description (several shortener handlers in one config share them).
func register[C prometheus.Collector](reg *prometheus.Registry, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) count(source, result string) {
	m.redirects.WithLabelValues(source, result).Inc()
}

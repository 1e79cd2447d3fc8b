// Package promreg registers the modules' collectors on Caddy's metrics
// registry, sharing one collector between the handlers of a config (and
// the configs of a reload) that register it under the same description.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register adds c to reg, or returns the collector already registered
// under the same description.
func Register[C prometheus.Collector](reg *prometheus.Registry, c C) (C, error) {
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

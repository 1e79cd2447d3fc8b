package ondemand

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgekit/caddy-edgekit/internal/promreg"
)

// The answers of the permission: the answer label of
// caddy_shortener_tls_permission_total. The set is closed.
const (
	answerYes   = "yes"   // a link domain: a certificate may be issued
	answerNo    = "no"    // not a link domain, or not a name one can be
	answerError = "error" // a store failed or did not answer in time: no
)

// answers are the permission's counters, one per answer, resolved once.
type answers struct{ yes, no, err prometheus.Counter }

// newAnswers registers caddy_shortener_tls_permission_total on reg (nil:
// not registered), every answer shown from 0.
func newAnswers(reg *prometheus.Registry) (answers, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy",
		Subsystem: "shortener",
		Name:      "tls_permission_total",
		Help:      "Answers of the on-demand TLS permission tls.permission.shortener: yes (a link domain), no, error (the store failed or was too slow: no).",
	}, []string{"answer"})
	if reg != nil {
		var err error
		if vec, err = promreg.Register(reg, vec); err != nil {
			return answers{}, fmt.Errorf("tls.permission.shortener: registering metrics: %w", err)
		}
	}
	return answers{yes: vec.WithLabelValues(answerYes), no: vec.WithLabelValues(answerNo), err: vec.WithLabelValues(answerError)}, nil
}

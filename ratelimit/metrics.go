package ratelimit

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// outcome is a decision's outcome for one zone: the `outcome` label.
type outcome uint8

const (
	outcomeAllowed       outcome = iota // the zone allowed the request
	outcomeRefused                      // the zone refused it (store or local fallback)
	outcomeDryRunRefused                // a dry_run zone would have refused it
	outcomeFailOpen                     // the store failed; passed without a decision
	outcomeFailClosed                   // the store failed; refused with 503
	outcomeFallback                     // the store failed; the local limiter allowed it
	outcomeOverloaded                   // the decision could not be sent in time; refused with 503
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"allowed", "refused", "dry_run_refused", "fail_open", "fail_closed", "fallback", "overloaded"}

// metrics are the module's collectors. Like Caddy's own handlers, they are
// created once per process and registered on each config's registry.
var metrics = struct {
	once          sync.Once
	decisions     *prometheus.CounterVec
	storeDuration prometheus.Histogram
	storeErrors   prometheus.Counter
	inputs        *prometheus.CounterVec
	bansSet       *prometheus.CounterVec
	jwtTokensVec  *prometheus.CounterVec
	jwtTokens     [numJWTResults]prometheus.Counter // by result, looked up once
	jwksFailures  prometheus.Counter
	breakerOpen   prometheus.Gauge
}{}

func initMetrics(registry *prometheus.Registry) error {
	const ns, sub = "caddy", "ratelimit"
	metrics.once.Do(func() {
		metrics.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "decisions_total",
			Help:      "Rate limit decisions per zone and outcome.",
		}, []string{"zone", "outcome"})
		metrics.storeDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "store_duration_seconds",
			Help:      "Latency of one decision call to the rate limit store (Redis; the in-process store is not timed).",
			Buckets:   []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25},
		})
		metrics.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "store_errors_total",
			Help:      "Rate limit store calls that failed or timed out.",
		})
		metrics.inputs = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "invalid_input_total",
			Help:      "Requests whose rate limit input was out of bounds or ambiguous, per zone and kind (never a store failure).",
		}, []string{"zone", "kind"})
		metrics.bansSet = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "bans_set_total",
			Help:      "Bans set per zone by this instance's requests (a key refused ban_after times within the window).",
		}, []string{"zone"})
		metrics.jwtTokensVec = prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "jwt_tokens_total",
			Help:      "Bearer tokens a jwt key source looked at, per result: valid, invalid or missing.",
		}, []string{"result"})
		for r := range metrics.jwtTokens {
			metrics.jwtTokens[r] = metrics.jwtTokensVec.WithLabelValues(jwtResultNames[r])
		}
		metrics.jwksFailures = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "jwks_refresh_failures_total",
			Help:      "Loads of a jwt key source's JWKS (file or URL) that failed; the last keys loaded stayed.",
		})
		metrics.breakerOpen = prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns,
			Subsystem: sub,
			Name:      "breaker_open",
			Help:      "Loaded rate limit handlers whose store circuit breaker is open (their zones decide by on_error without calling the store).",
		})
	})
	if registry == nil {
		return nil
	}
	// Several ratelimit handlers in one config share the registry; the
	// second registration of the same collector is not an error.
	for _, c := range []prometheus.Collector{metrics.decisions, metrics.storeDuration, metrics.storeErrors, metrics.inputs, metrics.bansSet,
		metrics.jwtTokensVec, metrics.jwksFailures, metrics.breakerOpen} {
		if err := registry.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) || are.ExistingCollector != c {
				return err
			}
		}
	}
	return nil
}

// zoneCounters are one zone's decision counters, looked up once at
// provision so the request path does no label hashing.
type zoneCounters [numOutcomes]prometheus.Counter

func newZoneCounters(zone string) zoneCounters {
	var c zoneCounters
	for o := range c {
		c[o] = metrics.decisions.WithLabelValues(zone, outcomeNames[o])
	}
	return c
}

// inputKind is what was wrong with a request's input: the `kind` label of
// caddy_ratelimit_invalid_input_total.
type inputKind uint8

const (
	inputCostOverQuota inputKind = iota // a cost the zone can never grant: refused with its status
	inputCost                           // a cost that is not a non-negative integer: 400
	inputQuota                          // a placeholder quota invalid or past the bounds: 500
	inputPlan                           // the plan key names a row skipped at load: the zone's own quota applied
	inputRepeated                       // a field the key is read from sent more than once: 400
	inputCostAfter                      // a real cost (cost_after) that is not a non-negative integer: the fallback charged
	numInputKinds
)

var inputKindNames = [numInputKinds]string{"cost_over_quota", "cost", "quota", "plan", "repeated", "cost_after"}

// inputCounters are one zone's invalid input counters, looked up once at
// provision.
type inputCounters [numInputKinds]prometheus.Counter

func newInputCounters(zone string) inputCounters {
	var c inputCounters
	for k := range c {
		c[k] = metrics.inputs.WithLabelValues(zone, inputKindNames[k])
	}
	return c
}

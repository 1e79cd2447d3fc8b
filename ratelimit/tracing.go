package ratelimit

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgekit/caddy-edgekit/internal/tracing"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// tracerScope names the tracer of the handler's spans.
const tracerScope = "github.com/edgekit/caddy-edgekit/ratelimit"

// decideTraced is decideAll under a `ratelimit.decide` span, a child of
// the request's span, when Caddy's `tracing` handler traces the request;
// otherwise decideAll itself: no span, no allocation. The span tells the
// zones, the store asked, each zone's outcome and the request's, the
// breaker's state and the digests of the keys (the keys themselves only
// with log_keys); a store failure marks it failed (docs/operations.md).
func (h *Handler) decideTraced(ctx context.Context, ds []zoneDecision) error {
	if !tracing.On(ctx) {
		return h.decideAll(ctx, ds)
	}
	ctx, span := tracing.Start(ctx, tracerScope, "ratelimit.decide", trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	err := h.decideAll(ctx, ds)
	span.SetAttributes(h.decideAttributes(ds)...)
	if err != nil && !errors.Is(err, limiter.ErrOverloaded) { // load is no failure: see the outcome
		tracing.Fail(span, err)
	}
	return err
}

// decideAttributes describes the decision of ds. The per-zone attributes
// are lists in the order of ratelimit.zones.
func (h *Handler) decideAttributes(ds []zoneDecision) []attribute.KeyValue {
	zones := make([]string, len(ds))
	outcomes := make([]string, len(ds))
	digests := make([]string, len(ds))
	var keys []string
	if h.LogKeys {
		keys = make([]string, len(ds))
	}
	request := ""
	for i := range ds {
		d := &ds[i]
		zones[i] = d.zone.Name
		outcomes[i] = zoneOutcome(d)
		if len(d.ask.Key) >= limiter.DigestLen {
			digests[i] = d.ask.Key[len(d.ask.Key)-limiter.DigestLen:]
		}
		if keys != nil {
			keys[i] = d.key
		}
		if outcomeRank(outcomes[i]) > outcomeRank(request) {
			request = outcomes[i]
		}
	}
	attrs := []attribute.KeyValue{
		attribute.StringSlice("ratelimit.zones", zones),
		attribute.String("ratelimit.store", h.storeAsked(ds)),
		attribute.String("ratelimit.outcome", request),
		attribute.StringSlice("ratelimit.zone_outcomes", outcomes),
		attribute.StringSlice("ratelimit.key_digest", digests),
	}
	if keys != nil {
		attrs = append(attrs, attribute.StringSlice("ratelimit.key", keys))
	}
	if !h.inProcess && h.breaker != nil {
		attrs = append(attrs, attribute.String("ratelimit.breaker", h.breaker.state()))
	}
	return attrs
}

// zoneOutcome is d's outcome, named as in the decisions metric; "" when
// the zone was not decided (another zone refused first).
func zoneOutcome(d *zoneDecision) string {
	switch {
	case d.state == stateFailClosed:
		return outcomeNames[outcomeFailClosed]
	case d.state == stateFailOpen:
		return outcomeNames[outcomeFailOpen]
	case d.state == stateOverloaded:
		return outcomeNames[outcomeOverloaded]
	case !d.decided():
		return ""
	case !d.res.Allowed && d.zone.DryRun:
		return outcomeNames[outcomeDryRunRefused]
	case !d.res.Allowed:
		return outcomeNames[outcomeRefused]
	case d.state == stateLocal:
		return outcomeNames[outcomeFallback]
	default:
		return outcomeNames[outcomeAllowed]
	}
}

// requestOutcomes orders the zones' outcomes: the request's is the
// highest of its zones'.
var requestOutcomes = [...]string{
	"",
	outcomeNames[outcomeAllowed],
	outcomeNames[outcomeFallback],
	outcomeNames[outcomeDryRunRefused],
	outcomeNames[outcomeFailOpen],
	outcomeNames[outcomeRefused],
	outcomeNames[outcomeOverloaded],
	outcomeNames[outcomeFailClosed],
}

func outcomeRank(o string) int {
	for i, name := range requestOutcomes {
		if name == o {
			return i
		}
	}
	return 0
}

// storeAsked names what decided ds: the store ("redis", "cluster" or
// "memory", the in-process store) when any zone was sent to it, else the
// deny cache ("deny_cache") or the approximate zones' local counts
// ("approximate").
func (h *Handler) storeAsked(ds []zoneDecision) string {
	cached := false
	for i := range ds {
		d := &ds[i]
		switch {
		case d.cached:
			cached = true
		case d.state != stateNone && d.state != stateApprox:
			return h.storeName()
		}
	}
	if cached {
		return "deny_cache"
	}
	return "approximate"
}

// storeName names the handler's store.
func (h *Handler) storeName() string {
	if _, ok := h.store.(*limiter.RedisStore); !ok {
		return "memory"
	}
	if h.client != nil {
		if _, ok := h.client.UniversalClient.(*redis.ClusterClient); ok {
			return "cluster"
		}
	}
	return "redis"
}

package ratelimit

import (
	"strconv"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// What a decision applied: its quota (the zone's own, a plan's, from
// placeholders, under the brake) and the values that quota gives the
// response headers and the local fallback.

// static reports whether the decision applies the zone's own quota, whose
// header values are precomputed.
func (d *zoneDecision) static() bool { return d.ask.Limit == d.zone.limit }

// policyItem is the decision's RateLimit-Policy item.
func (d *zoneDecision) policyItem() string {
	if d.static() {
		return d.zone.policy
	}
	return policyItem(d.zone.quoted, d.ask.Limit)
}

// limitStr is the decision's X-RateLimit-Limit.
func (d *zoneDecision) limitStr() string {
	if d.static() {
		return d.zone.limitStr
	}
	return strconv.FormatInt(d.ask.Limit.Events, 10)
}

// localLimit is the decision's quota for the local fallback.
func (d *zoneDecision) localLimit() limiter.Limit {
	if d.static() {
		return d.zone.local
	}
	return localLimit(d.ask.Limit, d.zone.instances)
}

// policyItem is a zone's RateLimit-Policy item under limit l:
// `"<zone>";q=<events>;w=<window seconds>`, or for a concurrency zone
// `"<zone>";q=<events>;qu="concurrent-requests"`.
func policyItem(quoted string, l limiter.Limit) string {
	if l.Algorithm == limiter.Concurrency {
		return quoted + ";q=" + strconv.FormatInt(l.Events, 10) + `;qu="concurrent-requests"`
	}
	return quoted + ";q=" + strconv.FormatInt(l.Events, 10) + ";w=" + strconv.FormatInt(ceilSeconds(l.Window), 10)
}

// localLimit is l for the `local` fallback of one of instances Caddy
// instances: ⌈events/instances⌉ (and a token bucket's burst likewise).
func localLimit(l limiter.Limit, instances int64) limiter.Limit {
	l.Events = ceilDiv(l.Events, instances)
	if l.BucketBurst() {
		l.Burst = ceilDiv(l.Burst, instances)
	}
	return l
}

// ceilDiv is ⌈a/b⌉, at least 1.
func ceilDiv(a, b int64) int64 {
	if b <= 1 {
		return max(a, 1)
	}
	return max((a+b-1)/b, 1)
}

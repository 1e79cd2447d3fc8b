package ratelimit

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// DynamicQuota holds the placeholders of a zone's `events`, `burst` and
// `window`, expanded per request (for example the outputs of a `map` that
// assigns a plan per API key). A value that does not expand to a valid
// number, or a quota past the bounds of the zone's own fields, fails the
// request with status 500 (logged); it never bypasses the limit.
type DynamicQuota struct {
	// Expands to the quota, a positive integer.
	Events string `json:"events,omitempty"`
	// Expands to the burst, a non-negative integer.
	Burst string `json:"burst,omitempty"`
	// Expands to the window, a duration such as `1m` or `30s`.
	Window string `json:"window,omitempty"`
}

// isTemplate reports whether a Caddyfile value is a placeholder template
// rather than a static value.
func isTemplate(v string) bool { return strings.Contains(v, "{") }

// quotaSource says where a request's quota came from (logs, admin API).
type quotaSource uint8

const (
	sourceStatic  quotaSource = iota // the zone's events/burst/window
	sourcePlan                       // a row of the zone's plans table
	sourceDynamic                    // the zone's placeholders
)

var quotaSourceNames = [...]string{"static", "plan", "dynamic"}

func (s quotaSource) String() string { return quotaSourceNames[s] }

// zoneQuota is what a zone with plans or placeholders needs per request;
// a zone with a static quota has none, and reads its precomputed limit.
type zoneQuota struct {
	zone    string        // the zone's name, for errors
	base    limiter.Limit // the zone's static quota (placeholder fields zero)
	dynamic *DynamicQuota // nil: no placeholders
	planKey string        // template of the plan key (plans only)
	plans   *planHandle   // nil: no plans

	planExpr                          template // planKey, prepared
	eventsExpr, burstExpr, windowExpr template // dynamic's, prepared
	skippedPlan                       prometheus.Counter
}

// prepare prepares the templates of the plan key and the placeholders.
func (q *zoneQuota) prepare() {
	q.planExpr = newTemplate(q.planKey)
	if dq := q.dynamic; dq != nil {
		q.eventsExpr = newTemplate(dq.Events)
		q.burstExpr = newTemplate(dq.Burst)
		q.windowExpr = newTemplate(dq.Window)
	}
}

// limitFor is the zone's quota for one request, before the brake: the
// plan of the request's plan key if the plans table has it, else the
// zone's quota with its placeholders expanded.
func (q *zoneQuota) limitFor(r *http.Request, repl *caddy.Replacer) (limiter.Limit, quotaSource, error) {
	if q.plans != nil {
		p, ok, skipped := q.plans.lookupRow(q.planExpr.expand(r, repl))
		if ok {
			return q.planLimit(p), sourcePlan, nil
		}
		if skipped && q.skippedPlan != nil {
			q.skippedPlan.Inc()
		}
	}
	if q.dynamic == nil {
		return q.base, sourceStatic, nil
	}
	l, err := q.expandLimit(func(field, _ string) (string, error) {
		switch field {
		case "events":
			return q.eventsExpr.expand(r, repl), nil
		case "burst":
			return q.burstExpr.expand(r, repl), nil
		}
		return q.windowExpr.expand(r, repl), nil
	})
	return l, sourceDynamic, err
}

// planLimit is the zone's limit under plan p.
// A concurrency zone takes only events from the plan (its window is the
// zone's lease TTL).
func (q *zoneQuota) planLimit(p plan) limiter.Limit {
	if q.base.Algorithm == limiter.Concurrency {
		return limiter.Limit{Algorithm: q.base.Algorithm, Events: p.events, Window: q.base.Window}
	}
	return limiter.Limit{Algorithm: q.base.Algorithm, Events: p.events, Window: p.window, Burst: p.burst, Calendar: p.calendar(q.base.Calendar)}
}

// expandLimit is the zone's limit with each placeholder field replaced by
// expand(field, template), parsed and checked.
func (q *zoneQuota) expandLimit(expand func(field, tmpl string) (string, error)) (limiter.Limit, error) {
	l := q.base
	dq := q.dynamic
	if dq.Events != "" {
		v, err := expand("events", dq.Events)
		if err != nil {
			return l, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("zone %q: events %s expanded to %q: must be a positive integer", q.zone, dq.Events, v)
		}
		l.Events = n
	}
	if dq.Burst != "" {
		v, err := expand("burst", dq.Burst)
		if err != nil {
			return l, err
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return l, fmt.Errorf("zone %q: burst %s expanded to %q: must be a non-negative integer", q.zone, dq.Burst, v)
		}
		l.Burst = n
	}
	if dq.Window != "" {
		v, err := expand("window", dq.Window)
		if err != nil {
			return l, err
		}
		d, err := caddy.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Millisecond {
			return l, fmt.Errorf("zone %q: window %s expanded to %q: must be a duration of at least 1ms", q.zone, dq.Window, v)
		}
		l.Window = d
	}
	if err := limiter.CheckLimit(l); err != nil {
		return l, fmt.Errorf("zone %q: expanded quota: %w", q.zone, err)
	}
	return l, nil
}

// provisionQuota sets up the zone's plans and placeholders, if any (after
// z.limit is set).
func (z *Zone) provisionQuota(ctx caddy.Context, instances int) error {
	z.instances = int64(instances)
	if z.Dynamic == nil && z.Plans == nil {
		return nil
	}
	z.quota = &zoneQuota{zone: z.Name, base: z.limit, dynamic: z.Dynamic, skippedPlan: z.inputs[inputPlan]}
	if z.Plans != nil {
		z.quota.planKey = cmp.Or(z.Plans.PlanKey, z.Key)
		z.once = appendFields(z.once, z.quota.planKey)
	}
	z.quota.prepare()
	if z.Plans != nil {
		var err error
		if z.quota.plans, err = loadPlans(z.Plans, z.limit.Algorithm, ctx.Logger()); err != nil {
			return fmt.Errorf("zone %q: plans: %w", z.Name, err)
		}
	}
	return nil
}

// cleanup releases what provisionQuota took.
func (z *Zone) cleanup() error {
	z.approx.close() // sends the units taken since the last sync
	z.approx = nil
	if z.quota == nil {
		return nil
	}
	return z.quota.plans.release()
}

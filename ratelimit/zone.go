package ratelimit

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Zone is one quota: requests that match it are counted per expanded key.
type Zone struct {
	// The zone's name: unique in the handler, letters, digits, `_` and `-`.
	// It names the zone in response headers, logs, metrics and store keys.
	Name string `json:"name"`

	// What is counted: a template expanded per request, such as `{client_ip}`
	// or `{http.request.header.X-API-Key}`. Unknown placeholders expand to
	// the empty string, and an empty key is still a key: all requests that
	// expand to it share one quota (an absent header never bypasses the
	// limit). A request carrying a header, cookie or query parameter the
	// key (or `plan_key`, or `hash_tag`) reads more than once is refused
	// with 400, nothing charged; one header line holding a comma-separated
	// list is one value. Key client addresses by `{client_ip}` (with the
	// server's `trusted_proxies` and `trusted_proxies_strict`: without
	// strict mode the client chooses the address, and a warning is logged
	// at load), never by `X-Forwarded-For`. Required.
	Key string `json:"key"`

	// The quota: how many units (requests at cost 1) a key may take per
	// window; `concurrency`: how many requests of a key may be in flight
	// at once. Required, > 0, at most 2^50 (sliding_log: 10000), unless
	// `dynamic` sets it.
	Events int64 `json:"events,omitempty"`

	// The length of the window over which `events` are allowed: at least
	// 1ms, at most 10 years (87600h). Required, unless `dynamic` sets it;
	// not for `concurrency` zones (see `lease_ttl`).
	Window caddy.Duration `json:"window,omitempty"`

	// A calendar period instead of `window` (fixed_window only; leave
	// `window` unset): `hour`, `day`, `week` or `month`. The quota resets
	// at the start of each period in `tz`: each local hh:00 (a 23- or
	// 25-hour day has 23 or 25 hours), local midnight, Monday 00:00 (ISO
	// weeks), the first of the month 00:00; where a midnight does not
	// exist (a DST gap), at the first instant after it. Retry-After and
	// the RateLimit reset count to the period's end. In the Caddyfile:
	// `window 1h|1d|1w|1mo calendar [tz <zone>]`. Not with `dynamic`
	// window or `approximate`; a plan row may set its own period (see
	// Plans). Default: none.
	Calendar string `json:"calendar,omitempty"`

	// The IANA time zone of `calendar` periods, such as `Europe/Berlin`.
	// An unknown zone is refused at load. Default: `UTC`.
	TZ string `json:"tz,omitempty"`

	// `token_bucket`, `sliding_window`, `fixed_window`, `sliding_log`,
	// `leaky_bucket` or `concurrency`. A `concurrency` zone admits at most
	// `events` requests of a key in flight: each admitted request holds a
	// lease, given back when its response ends however it ends (completed,
	// client gone, handler error, upstream timeout, a proxied WebSocket or
	// stream closed). Such zones never enter the deny cache, and take no
	// `window`, `burst`, `cost`, `count_status` or `approximate`.
	// Default: `token_bucket`.
	Algorithm string `json:"algorithm,omitempty"`

	// concurrency: how long a lease lives unless refreshed. Leases are
	// refreshed every third of it while their request lives (also across
	// a config reload), so a long request keeps its slot and the slots of
	// a crashed instance are free again within `lease_ttl`. At least 1s,
	// at most 24h. Default: `1m`.
	LeaseTTL caddy.Duration `json:"lease_ttl,omitempty"`

	// concurrency: how long an admitted request may take to send its
	// whole body (requests with a body only), from its admission. Past it
	// the request's lease is no longer refreshed, so its slot is free again
	// within `lease_ttl` (Caddy's read_idle_timeout is reset by every byte:
	// a client sending one byte a second would hold its slot for ever), and
	// its next body read fails. Set it above the longest upload a client
	// may legitimately take. At least 1s, at most 24h. Default: `1m`.
	BodyTimeout caddy.Duration `json:"body_timeout,omitempty"`

	// token_bucket: the bucket's capacity (default: `events`); it refills
	// in burst × window / events, at most 10 years. leaky_bucket: how many
	// requests may wait for their turn, each held by the handler until it
	// leaves (default: `0`, no waiting); the longest wait, burst × window /
	// events, is at most 24h. Unused by the others. At most 2^50.
	Burst int64 `json:"burst,omitempty"`

	// Units one request takes: a non-negative integer (at most 2^50) or a
	// placeholder template expanded per request (such as
	// `{http.request.header.X-Cost}`); a template that does not expand to a
	// non-negative integer refuses the request with status 400, nothing
	// charged (logged once per key per 10s, the value cut to 64 bytes); it
	// never bypasses the limit. A cost larger than the zone can ever grant (its
	// quota before any brake: `events`, a token bucket's `burst`, a leaky
	// bucket's `burst` + 1) is refused like any refusal (`status`, headers),
	// nothing charged. `0` checks the quota without taking any.
	// Default: `1`.
	Cost caddyhttp.WeakString `json:"cost,omitempty"`

	// The real cost, known when the response ends: charged then, the
	// zone's `cost` pre-charged at admission (see CostAfter). Caddyfile:
	// `cost_after <template> [fallback <n>]`. Default: none (`cost` is
	// what a request takes).
	CostAfter *CostAfter `json:"cost_after,omitempty"`

	// The zone applies only to requests matching this matcher set. Default:
	// every request the handler sees.
	MatchRaw caddy.ModuleMap `json:"match,omitempty" caddy:"namespace=http.matchers"`

	// Only responses with one of these statuses take quota, after the
	// response (for example `401` to limit failed logins). Before the
	// request goes on, the zone is checked without taking: a request is
	// still refused when the key has nothing left. Default: every response
	// takes quota.
	CountStatus []int `json:"count_status,omitempty"`

	// What to do when the store fails for this zone: `open`, `closed` or
	// `local` (see the handler's `on_error`). Default: the handler's.
	OnError string `json:"on_error,omitempty"`

	// Decide, set headers, log and count, but never refuse a request.
	DryRun bool `json:"dry_run,omitempty"`

	// Decide in process, syncing with Redis every this interval, for
	// extreme rates: a key's first request (and any after Redis was out of
	// reach for three intervals) is decided on Redis as usual; the
	// following ones are decided from what Redis had left at the last
	// sync, and the units taken are sent at the next. The overshoot is
	// bounded: between two syncs one instance allows at most
	// ⌈remaining/instances⌉ of a key; what goes past the quota is still
	// charged (the key goes into debt, repaid before anything more is
	// allowed), so the rate over time holds. A key refused in process waits
	// for the next sync. token_bucket, sliding_window and fixed_window
	// only; without `redis` the zone is decided in process anyway and this
	// has no effect. Default: off (every request decided on Redis).
	Approximate caddy.Duration `json:"approximate,omitempty"`

	// Placeholders for `events`, `burst` and `window`, expanded per
	// request (such as the output of a `map` assigning a plan per API
	// key). In the Caddyfile, a value of `events`, `burst` or `window`
	// holding a placeholder lands here. A value that does not expand to a
	// valid number fails the request with status 500 (logged), never a
	// bypass. Default: none.
	Dynamic *DynamicQuota `json:"dynamic,omitempty"`

	// Ban a key its zone keeps refusing: a key refused `ban_after` times
	// within the zone's window is refused outright for this long, its
	// quota untouched, `Retry-After` the ban's remainder. Each further ban
	// of the key doubles, up to `ban_max`. Decided in the same store call
	// as the quota; with `redis`, every instance sees the ban. A key's
	// refusals are remembered one window after the first of them, its
	// bans (which double the next) `ban_max` after the last one ends.
	// Refusals of `dry_run` zones, of a cost past the quota and requests
	// refused with 400 never count. At least 1ms, at most 10 years; not
	// with `approximate` nor on a `concurrency` zone. Default: none (no bans).
	Ban caddy.Duration `json:"ban,omitempty"`

	// How many refusals within the window set a ban. Default: `1`.
	BanAfter int64 `json:"ban_after,omitempty"`

	// The longest ban: where doubling stops (at least `ban`, at most 10
	// years). Default: `24h` (or `ban`, if longer).
	BanMax caddy.Duration `json:"ban_max,omitempty"`

	// Neighbours never banned (their refusals are no offences): a network
	// (a CIDR such as `100.64.0.0/10`, or one IP address) is matched
	// against Caddy's client IP (so the server's `trusted_proxies`
	// applies); any other value against the zone's expanded key (a partner's
	// API key). Needs `ban`. Default: none.
	BanExempt []string `json:"ban_exempt,omitempty"`

	// Quotas per plan key, read from a PostgreSQL table and refreshed in
	// the background. A request whose plan key has a row gets that row's
	// quota; any other gets the zone's own. Default: none.
	Plans *Plans `json:"plans,omitempty"`

	// Tell the first time in a period that a key's count reaches each of
	// these percentages of its quota (1-100, rising, at most 8): once
	// across every instance sharing the store, decided in the call that
	// charges; a refund never makes it tell again. The tell is the Caddy
	// event `ratelimit_threshold` (data: zone, store_key, key with
	// `log_keys`, threshold, used, quota, period_start, period_end) when
	// something subscribes to it, else an info log. A percentage is of the
	// quota the request was decided under (a plan's, a placeholder's),
	// rounded up to a whole unit. fixed_window only (its window, or its
	// calendar period, is the period); not with `approximate`. In the
	// Caddyfile: `notify 80% 100%`. Default: none.
	Notify []int `json:"notify,omitempty"`

	// Keep each key's units and refusals per period, for billing (see
	// ZoneUsage). Default: off.
	Usage *ZoneUsage `json:"usage,omitempty"`

	matchers caddyhttp.MatcherSets
	limit    limiter.Limit // as asked of the store
	ban      limiter.Ban   // as asked of the store (zero: none, or dry_run)
	exempt   banExempt     // BanExempt, prepared
	local    limiter.Limit // at events/instances, for the local fallback
	cost     int64         // when costTmpl is false
	costTmpl bool
	keyExpr  template // Key, prepared
	costExpr template // Cost, when costTmpl
	// costAfter: CostAfter, prepared (nil: none)
	costAfter *costAfterExpr
	onError   failureMode
	policy    string // the zone's RateLimit-Policy item
	quoted    string // `"<name>"`, the RateLimit item's start
	limitStr  string // Events as a string, for X-RateLimit-Limit
	nameAny   any    // Name, boxed once for the replacer
	readsJWT  bool   // a template of the zone reads {http.ratelimit.jwt.*}
	// errRefused is the error of a request the zone refuses.
	errRefused error
	problem    problemBody // the body of its refusals (handler `body problem`)
	counters   zoneCounters
	inputs     inputCounters // invalid inputs, by kind
	once       []field       // what the key (plan key, hash tag) reads: sent once
	// quota: nil for a static quota; plans and placeholders otherwise
	quota     *zoneQuota
	instances int64              // the handler's instances, for the local fallback
	approx    *approxTable       // approximate: nil when off or not on Redis
	refusals  *zoneRefusals      // what the refusal logs summed (see refusallog.go)
	invalid   *zoneRefusals      // the invalid input logs, throttled the same way (see invalidlog.go)
	bansSet   prometheus.Counter // caddy_ratelimit_bans_set_total{zone}
	seen      *bansSeen          // banned keys seen here (log_keys; nil without ban)
	setHere   *bansSetHere       // bans set here, for bans_in_force (nil without ban)
	notify    bool               // ratelimit_exceeded is observed: the store tells first refusals
	marks     []int64            // Notify's unit counts for the static quota (see marksFor)
	keep      time.Duration      // usage: how long a period's usage is kept (0: off)
	pos       *cfparse.Positions // where the Caddyfile set each field (nil: JSON)
}

// DefaultAlgorithm is a zone's algorithm when none is set.
const DefaultAlgorithm = limiter.TokenBucket

// DefaultLeaseTTL is a concurrency zone's lease_ttl when none is set.
const DefaultLeaseTTL = time.Minute

// bodyTimeout is a concurrency zone's body_timeout, or its default.
func (z *Zone) bodyTimeout() time.Duration {
	return cmp.Or(time.Duration(z.BodyTimeout), DefaultBodyTimeout)
}

// window is the Window of the zone's limit: its window, or a concurrency
// zone's lease TTL.
func (z *Zone) window() time.Duration {
	if z.Algorithm == limiter.Concurrency {
		return cmp.Or(time.Duration(z.LeaseTTL), DefaultLeaseTTL)
	}
	if u, ok := limiter.ParseCalendarUnit(z.Calendar); ok {
		return u.Nominal()
	}
	return time.Duration(z.Window)
}

// calendar is the zone's calendar period (validated: see checkCalendar).
func (z *Zone) calendar() limiter.Calendar {
	u, ok := limiter.ParseCalendarUnit(z.Calendar)
	if !ok {
		return limiter.Calendar{}
	}
	loc, _ := time.LoadLocation(cmp.Or(z.TZ, "UTC"))
	return limiter.Calendar{Unit: u, Loc: loc}
}

// provision loads the zone's matchers and precomputes what each request
// needs (the zone is valid: see Handler.validate). instances divides the
// quota of the local fallback; status is the handler's refusal status.
func (z *Zone) provision(ctx caddy.Context, def failureMode, instances, status int) error {
	if z.MatchRaw != nil {
		mods, err := ctx.LoadModule(z, "MatchRaw")
		if err != nil {
			return fmt.Errorf("zone %q: loading matchers: %w", z.Name, err)
		}
		if err := z.matchers.FromInterface([]map[string]any{mods.(map[string]any)}); err != nil {
			return fmt.Errorf("zone %q: %w", z.Name, err)
		}
	}
	alg := z.Algorithm
	if alg == "" {
		alg = DefaultAlgorithm
	}
	z.limit = limiter.Limit{Algorithm: alg, Events: z.Events, Window: z.window(), Burst: z.Burst, Calendar: z.calendar()}
	z.local = localLimit(z.limit, int64(instances))
	z.marks = nil
	z.marks = z.marksFor(z.limit.Events)
	z.keep = z.usageKeep()
	z.ban = z.storeBan()
	z.exempt, _ = parseBanExempt(z.BanExempt) // validated above

	z.cost, z.costTmpl = 1, false
	z.keyExpr = newTemplate(z.Key)
	if c := string(z.Cost); c != "" {
		if strings.Contains(c, "{") {
			z.costTmpl = true
			z.costExpr = newTemplate(c)
		} else {
			z.cost, _ = parseCost(c) // validated above
		}
	}
	if z.CostAfter != nil {
		z.costAfter = newCostAfterExpr(z.CostAfter)
	}
	z.onError = def
	if z.OnError != "" {
		z.onError, _ = parseFailureMode(z.OnError) // validated above
	}
	z.quoted = strconv.Quote(z.Name) // names are [A-Za-z0-9_-]+: no escapes
	z.policy = policyItem(z.quoted, z.limit)
	z.limitStr = strconv.FormatInt(z.Events, 10)
	z.nameAny = z.Name
	z.errRefused = fmt.Errorf("rate limit exceeded in zone %q", z.Name)
	z.problem = newProblemBody(z.Name, status)
	z.refusals, z.invalid = new(zoneRefusals), new(zoneRefusals)
	z.bansSet = bansSetCounter(z.Name)
	if z.Ban > 0 {
		z.seen = newBansSeen()
		z.setHere = newBansSetHere()
	}
	z.counters = newZoneCounters(z.Name)
	z.inputs = newInputCounters(z.Name)
	z.once = appendFields(nil, z.Key)
	return z.provisionQuota(ctx, instances)
}

// matches reports whether the zone applies to r.
func (z *Zone) matches(r *http.Request) (bool, error) {
	if len(z.matchers) == 0 {
		return true, nil
	}
	return z.matchers.AnyMatchWithError(r)
}

// counts reports whether a response with status takes the zone's quota.
func (z *Zone) counts(status int) bool {
	return len(z.CountStatus) == 0 || slices.Contains(z.CountStatus, status)
}

// requestCost is the units this request takes from the zone.
func (z *Zone) requestCost(r *http.Request, repl *caddy.Replacer) (int64, error) {
	if !z.costTmpl {
		return z.cost, nil
	}
	v := z.costExpr.expand(r, repl)
	n, err := parseCost(v)
	if err != nil {
		return 0, fmt.Errorf("zone %q: %w", z.Name, err)
	}
	return n, nil
}

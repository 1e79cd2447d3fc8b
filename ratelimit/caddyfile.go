package ratelimit

import (
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("ratelimit", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("ratelimit", httpcaddyfile.Before, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var m Handler
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return &m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	ratelimit [<matcher>] {
//	    zone <name> {
//	        key          <template>
//	        events       <n>
//	        window       <duration> | 1h|1d|1w|1mo calendar [tz <IANA zone>]
//	        algorithm    token_bucket|sliding_window|fixed_window|sliding_log|leaky_bucket|concurrency
//	        lease_ttl    <duration>
//	        body_timeout <duration>
//	        burst        <n>
//	        cost         <n|template>
//	        cost_after   <template> [fallback <n>]
//	        match        { <request matchers> }
//	        count_status <code...>
//	        on_error     open|closed|local
//	        dry_run
//	        approximate  <interval>
//	        plans postgres <dsn> {
//	            table    <name>
//	            refresh  <interval>
//	            plan_key <template>
//	        }
//	    }
//	    redis      <url> | redis { ... }
//	    timeout    <duration>
//	    on_error   open|closed|local
//	    instances  <n>
//	    hash_tag   <template>
//	    headers    ietf|legacy|both|none
//	    status     <code>
//	    log_keys
//	    max_keys   <n>
//	    client_network <ipv4_bits> <ipv6_bits>
//	    jitter     <fraction>
//	    body       problem|none
//	    jwt {
//	        jwks_file  <path>
//	        jwks_url   <https-url>
//	        secret     <hmac-key>
//	        refresh    <duration>
//	        issuer     <iss>
//	        audience   <aud...>
//	        leeway     <duration>
//	        algorithms <alg...>
//	        header     <name>
//	        on_invalid refuse|client
//	    }
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	h.pos = cfparse.NewPositions(d)
	if err := handlerBlock.Parse(d, h); err != nil {
		return err
	}
	h.pos.Ended(d)
	return h.validate()
}

// handlerBlock is the subdirectives of `ratelimit { ... }`.
var handlerBlock = cfparse.Block[Handler]{
	Repeatable: []string{"zone"},
	Each: func(h *Handler, d *caddyfile.Dispenser) {
		if d.Val() != "zone" { // a zone records its own lines
			h.pos.Field(d)
		}
	},
	Subdirectives: cfparse.Table[Handler]{
		"zone":           (*Handler).unmarshalZone,
		"redis":          (*Handler).unmarshalRedis,
		"timeout":        (*Handler).unmarshalTimeout,
		"on_error":       (*Handler).unmarshalOnError,
		"instances":      (*Handler).unmarshalInstances,
		"hash_tag":       (*Handler).unmarshalHashTag,
		"headers":        (*Handler).unmarshalHeaders,
		"status":         (*Handler).unmarshalStatus,
		"log_keys":       (*Handler).unmarshalLogKeys,
		"max_keys":       (*Handler).unmarshalMaxKeys,
		"client_network": (*Handler).unmarshalClientNetwork,
		"jitter":         (*Handler).unmarshalJitter,
		"body":           (*Handler).unmarshalBody,
		"jwt":            (*Handler).unmarshalJWT,
	},
}

// zoneBlock is the subdirectives of `zone <name> { ... }`.
var zoneBlock = cfparse.Block[Zone]{
	Prefix: func(z *Zone) string { return "zone '" + z.Name + "': " },
	Each:   func(z *Zone, d *caddyfile.Dispenser) { z.pos.Field(d) },
	Subdirectives: cfparse.Table[Zone]{
		"key":          (*Zone).unmarshalKey,
		"events":       (*Zone).unmarshalEvents,
		"burst":        (*Zone).unmarshalBurst,
		"window":       (*Zone).unmarshalWindow,
		"algorithm":    (*Zone).unmarshalAlgorithm,
		"cost":         (*Zone).unmarshalCost,
		"cost_after":   (*Zone).unmarshalCostAfter,
		"on_error":     (*Zone).unmarshalOnError,
		"approximate":  (*Zone).unmarshalApproximate,
		"lease_ttl":    (*Zone).unmarshalLeaseTTL,
		"body_timeout": (*Zone).unmarshalBodyTimeout,
		"match":        (*Zone).unmarshalMatch,
		"count_status": (*Zone).unmarshalCountStatus,
		"dry_run":      (*Zone).unmarshalDryRun,
		"notify":       (*Zone).unmarshalNotify,
		"usage":        (*Zone).unmarshalUsage,
		"plans":        (*Zone).unmarshalPlans,
		"ban":          (*Zone).unmarshalBan,
		"ban_max":      (*Zone).unmarshalBanMax,
		"ban_exempt":   (*Zone).unmarshalBanExempt,
	},
}

// unmarshalZone reads `zone <name> { ... }`.
func (h *Handler) unmarshalZone(d *caddyfile.Dispenser) error {
	z, err := parseZone(d)
	if err != nil {
		return err
	}
	h.Zones = append(h.Zones, z)
	return nil
}

// unmarshalRedis reads `redis <url>` or `redis { ... }`.
func (h *Handler) unmarshalRedis(d *caddyfile.Dispenser) error {
	h.Redis = new(redispool.Config)
	return h.Redis.UnmarshalCaddyfile(d)
}

// unmarshalTimeout reads `timeout <duration>`.
func (h *Handler) unmarshalTimeout(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	h.Timeout = caddy.Duration(dur)
	return err
}

// unmarshalOnError reads `on_error open|closed|local`.
func (h *Handler) unmarshalOnError(d *caddyfile.Dispenser) (err error) {
	h.OnError, err = cfparse.OneArg(d)
	return err
}

// unmarshalInstances reads `instances <n>`.
func (h *Handler) unmarshalInstances(d *caddyfile.Dispenser) (err error) {
	h.Instances, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalHashTag reads `hash_tag <template>`.
func (h *Handler) unmarshalHashTag(d *caddyfile.Dispenser) (err error) {
	h.HashTag, err = cfparse.OneArg(d)
	return err
}

// unmarshalHeaders reads `headers ietf|legacy|both|none`.
func (h *Handler) unmarshalHeaders(d *caddyfile.Dispenser) (err error) {
	h.Headers, err = cfparse.OneArg(d)
	return err
}

// unmarshalStatus reads `status <code>`.
func (h *Handler) unmarshalStatus(d *caddyfile.Dispenser) (err error) {
	h.Status, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalLogKeys reads `log_keys`.
func (h *Handler) unmarshalLogKeys(d *caddyfile.Dispenser) error {
	h.LogKeys = true
	return cfparse.NoArgs(d)
}

// unmarshalMaxKeys reads `max_keys <n>`.
func (h *Handler) unmarshalMaxKeys(d *caddyfile.Dispenser) (err error) {
	h.MaxKeys, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalJitter reads `jitter <fraction>`.
func (h *Handler) unmarshalJitter(d *caddyfile.Dispenser) error {
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	h.Jitter, err = strconv.ParseFloat(v, 64)
	if err != nil {
		return d.Errf("invalid jitter '%s': must be a fraction of the wait, 0-1", v)
	}
	return nil
}

// unmarshalBody reads `body problem|none`.
func (h *Handler) unmarshalBody(d *caddyfile.Dispenser) (err error) {
	h.Body, err = cfparse.OneArg(d)
	return err
}

// parseZone reads `zone <name> { ... }` at the dispenser's current token.
func parseZone(d *caddyfile.Dispenser) (*Zone, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	z := &Zone{Name: d.Val(), pos: cfparse.NewPositions(d)}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	if err := zoneBlock.Parse(d, z); err != nil {
		return nil, err
	}
	z.pos.Ended(d)
	return z, nil
}

// unmarshalKey reads `key <template>`.
func (z *Zone) unmarshalKey(d *caddyfile.Dispenser) (err error) {
	z.Key, err = cfparse.OneArg(d)
	return err
}

// unmarshalEvents reads `events <n|template>`.
func (z *Zone) unmarshalEvents(d *caddyfile.Dispenser) error {
	return z.unmarshalQuota(d, &z.Events)
}

// unmarshalBurst reads `burst <n|template>`.
func (z *Zone) unmarshalBurst(d *caddyfile.Dispenser) error {
	return z.unmarshalQuota(d, &z.Burst)
}

// unmarshalQuota reads the number of events or burst into n, or makes the
// field a placeholder template.
func (z *Zone) unmarshalQuota(d *caddyfile.Dispenser, n *int64) error {
	name := d.Val()
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	if isTemplate(v) {
		z.setDynamic(name, v)
		return nil
	}
	*n, err = cfparse.Int64(d, name, v)
	return err
}

// calendarWindows are the windows a `calendar` follows.
var calendarWindows = map[string]string{"1h": "hour", "1d": "day", "1w": "week", "1mo": "month"}

// unmarshalWindow reads `window <duration|template>` or `window
// 1h|1d|1w|1mo calendar [tz <zone>]`.
func (z *Zone) unmarshalWindow(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) > 1 {
		return z.unmarshalCalendar(d, args)
	}
	if len(args) != 1 {
		return d.ArgErr()
	}
	v := args[0]
	if isTemplate(v) {
		z.setDynamic("window", v)
		return nil
	}
	dur, err := cfparse.Duration(d, "window", v)
	z.Window = caddy.Duration(dur)
	return err
}

// unmarshalCalendar reads the arguments of `window <w> calendar [tz <zone>]`.
func (z *Zone) unmarshalCalendar(d *caddyfile.Dispenser, args []string) error {
	if args[1] != "calendar" || len(args) != 2 && (len(args) != 4 || args[2] != "tz") {
		return d.Errf("invalid window '%s': want window <duration> or window 1h|1d|1w|1mo calendar [tz <zone>]", strings.Join(args, " "))
	}
	unit, ok := calendarWindows[args[0]]
	if !ok {
		return d.Errf("invalid calendar window '%s': must be 1h, 1d, 1w or 1mo", args[0])
	}
	z.Calendar, z.Window, z.TZ = unit, 0, ""
	if len(args) == 4 {
		if _, err := time.LoadLocation(args[3]); err != nil || args[3] == "Local" || args[3] == "" {
			return d.Errf("unknown time zone '%s': use an IANA name such as Europe/Berlin", args[3])
		}
		z.TZ = args[3]
	}
	return nil
}

// unmarshalAlgorithm reads `algorithm <name>`.
func (z *Zone) unmarshalAlgorithm(d *caddyfile.Dispenser) (err error) {
	z.Algorithm, err = cfparse.OneArg(d)
	return err
}

// unmarshalCost reads `cost <n|template>`.
func (z *Zone) unmarshalCost(d *caddyfile.Dispenser) error {
	v, err := cfparse.OneArg(d)
	z.Cost = caddyhttp.WeakString(v)
	return err
}

// unmarshalOnError reads `on_error open|closed|local`.
func (z *Zone) unmarshalOnError(d *caddyfile.Dispenser) (err error) {
	z.OnError, err = cfparse.OneArg(d)
	return err
}

// unmarshalApproximate reads `approximate <interval>`.
func (z *Zone) unmarshalApproximate(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	z.Approximate = caddy.Duration(dur)
	return err
}

// unmarshalLeaseTTL reads `lease_ttl <duration>`.
func (z *Zone) unmarshalLeaseTTL(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	z.LeaseTTL = caddy.Duration(dur)
	return err
}

// unmarshalBodyTimeout reads `body_timeout <duration>`.
func (z *Zone) unmarshalBodyTimeout(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	z.BodyTimeout = caddy.Duration(dur)
	return err
}

// unmarshalMatch reads `match { <request matchers> }`.
func (z *Zone) unmarshalMatch(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	set, err := caddyhttp.ParseCaddyfileNestedMatcherSet(d)
	if err != nil {
		return err
	}
	if len(set) == 0 {
		return d.Errf("zone '%s': match needs at least one matcher", z.Name)
	}
	z.MatchRaw = set
	return nil
}

// unmarshalCountStatus reads `count_status <code...>`.
func (z *Zone) unmarshalCountStatus(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return d.ArgErr()
	}
	for _, a := range args {
		n, err := cfparse.Int(d, "count_status", a)
		if err != nil {
			return err
		}
		z.CountStatus = append(z.CountStatus, n)
	}
	return nil
}

// unmarshalDryRun reads `dry_run`.
func (z *Zone) unmarshalDryRun(d *caddyfile.Dispenser) error {
	z.DryRun = true
	return cfparse.NoArgs(d)
}

// unmarshalPlans reads `plans postgres <dsn> [{ ... }]`.
func (z *Zone) unmarshalPlans(d *caddyfile.Dispenser) (err error) {
	z.Plans, err = parsePlans(d)
	return err
}

// unmarshalBanMax reads `ban_max <duration>`.
func (z *Zone) unmarshalBanMax(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	z.BanMax = caddy.Duration(dur)
	return err
}

// unmarshalBanExempt reads `ban_exempt <network|key...>`.
func (z *Zone) unmarshalBanExempt(d *caddyfile.Dispenser) error {
	z.BanExempt = d.RemainingArgs()
	if len(z.BanExempt) == 0 {
		return d.ArgErr()
	}
	return nil
}

// unmarshalClientNetwork reads `client_network <ipv4_bits> <ipv6_bits>`.
func (h *Handler) unmarshalClientNetwork(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) != 2 {
		return d.ArgErr()
	}
	v4, err := cfparse.Int(d, "client_network ipv4 bits", args[0])
	if err != nil {
		return err
	}
	v6, err := cfparse.Int(d, "client_network ipv6 bits", args[1])
	h.ClientNetwork = &ClientNetwork{IPv4Bits: v4, IPv6Bits: v6}
	return err
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)

// setDynamic makes the zone's field (events, burst or window) the
// placeholder template tmpl.
func (z *Zone) setDynamic(field, tmpl string) {
	if z.Dynamic == nil {
		z.Dynamic = new(DynamicQuota)
	}
	switch field {
	case "events":
		z.Dynamic.Events = tmpl
	case "burst":
		z.Dynamic.Burst = tmpl
	case "window":
		z.Dynamic.Window = tmpl
	}
}

package ratelimit

import (
	"slices"
	"strconv"

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
//	        window       <duration>
//	        algorithm    token_bucket|sliding_window|fixed_window|sliding_log|leaky_bucket|concurrency
//	        lease_ttl    <duration>
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
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	h.pos = cfparse.NewPositions(d)
	seen := map[string]bool{}
	for d.NextBlock(0) {
		name := d.Val()
		if name != "zone" {
			if seen[name] {
				return d.Errf("duplicate subdirective '%s'", name)
			}
			seen[name] = true
			h.pos.Field(d)
		}
		if err := h.unmarshalField(d, name); err != nil {
			return err
		}
	}
	h.pos.Ended(d)
	return h.validate()
}

// unmarshalField reads the handler's subdirective name.
func (h *Handler) unmarshalField(d *caddyfile.Dispenser, name string) error {
	if name == "zone" {
		z, err := parseZone(d)
		if err != nil {
			return err
		}
		h.Zones = append(h.Zones, z)
		return nil
	}
	if name == "redis" {
		h.Redis = new(redispool.Config)
		return h.Redis.UnmarshalCaddyfile(d)
	}
	if name == "client_network" {
		return h.unmarshalClientNetwork(d)
	}
	if name == "log_keys" {
		h.LogKeys = true
		if d.NextArg() {
			return d.ArgErr()
		}
		return nil
	}
	if !slices.Contains(handlerArgFields, name) {
		return d.Errf("unrecognized subdirective '%s'", name)
	}
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	switch name {
	case "timeout":
		dur, err := cfparse.PositiveDuration(d, name, v)
		h.Timeout = caddy.Duration(dur)
		return err
	case "on_error":
		h.OnError = v
	case "instances":
		h.Instances, err = cfparse.PositiveInt(d, name, v)
	case "hash_tag":
		h.HashTag = v
	case "headers":
		h.Headers = v
	case "status":
		h.Status, err = cfparse.PositiveInt(d, name, v)
	case "max_keys":
		h.MaxKeys, err = cfparse.PositiveInt(d, name, v)
	case "body":
		h.Body = v
	case "jitter":
		h.Jitter, err = strconv.ParseFloat(v, 64)
		if err != nil {
			return d.Errf("invalid jitter '%s': must be a fraction of the wait, 0-1", v)
		}
	}
	return err
}

// The subdirectives of one argument, of the handler and of a zone.
var (
	handlerArgFields = []string{"timeout", "on_error", "instances", "hash_tag", "headers", "status", "max_keys", "jitter", "body"}
	zoneArgFields    = []string{"key", "events", "burst", "window", "algorithm", "cost", "on_error", "approximate", "lease_ttl", "ban_max"}
)

// parseZone reads `zone <name> { ... }` at the dispenser's current token.
func parseZone(d *caddyfile.Dispenser) (*Zone, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	z := &Zone{Name: d.Val(), pos: cfparse.NewPositions(d)}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if seen[name] {
			return nil, d.Errf("zone '%s': duplicate subdirective '%s'", z.Name, name)
		}
		seen[name] = true
		z.pos.Field(d)
		if err := z.unmarshalField(d, name); err != nil {
			return nil, err
		}
	}
	z.pos.Ended(d)
	return z, nil
}

// unmarshalField reads the zone's subdirective name.
func (z *Zone) unmarshalField(d *caddyfile.Dispenser, name string) error {
	switch name {
	case "match":
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
	case "count_status":
		args := d.RemainingArgs()
		if len(args) == 0 {
			return d.ArgErr()
		}
		for _, a := range args {
			n, err := cfparse.Int(d, name, a)
			if err != nil {
				return err
			}
			z.CountStatus = append(z.CountStatus, n)
		}
		return nil
	case "dry_run":
		z.DryRun = true
		if d.NextArg() {
			return d.ArgErr()
		}
		return nil
	case "plans":
		p, err := parsePlans(d)
		z.Plans = p
		return err
	case "ban":
		return z.unmarshalBan(d)
	case "cost_after":
		return z.unmarshalCostAfter(d)
	case "ban_exempt":
		z.BanExempt = d.RemainingArgs()
		if len(z.BanExempt) == 0 {
			return d.ArgErr()
		}
		return nil
	}
	if !slices.Contains(zoneArgFields, name) {
		return d.Errf("zone '%s': unrecognized subdirective '%s'", z.Name, name)
	}
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	switch name {
	case "key":
		z.Key = v
	case "events", "burst":
		if isTemplate(v) {
			z.setDynamic(name, v)
			return nil
		}
		n, err := cfparse.Int64(d, name, v)
		if name == "events" {
			z.Events = n
		} else {
			z.Burst = n
		}
		return err
	case "window":
		if isTemplate(v) {
			z.setDynamic(name, v)
			return nil
		}
		dur, err := cfparse.Duration(d, name, v)
		z.Window = caddy.Duration(dur)
		return err
	case "algorithm":
		z.Algorithm = v
	case "cost":
		z.Cost = caddyhttp.WeakString(v)
	case "on_error":
		z.OnError = v
	case "approximate":
		dur, err := cfparse.PositiveDuration(d, name, v)
		z.Approximate = caddy.Duration(dur)
		return err
	case "lease_ttl":
		dur, err := cfparse.PositiveDuration(d, name, v)
		z.LeaseTTL = caddy.Duration(dur)
		return err
	case "ban_max":
		dur, err := cfparse.PositiveDuration(d, name, v)
		z.BanMax = caddy.Duration(dur)
		return err
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

package ratelimit

import (
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
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
//	        algorithm    token_bucket|sliding_window|fixed_window|sliding_log|leaky_bucket
//	        burst        <n>
//	        cost         <n|template>
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
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for d.NextBlock(0) {
		name := d.Val()
		if name != "zone" {
			if seen[name] {
				return d.Errf("duplicate subdirective '%s'", name)
			}
			seen[name] = true
		}
		switch name {
		case "zone":
			z, err := parseZone(d)
			if err != nil {
				return err
			}
			for _, other := range h.Zones {
				if other.Name == z.Name {
					return d.Errf("duplicate zone '%s'", z.Name)
				}
			}
			h.Zones = append(h.Zones, z)
		case "redis":
			h.Redis = new(redispool.Config)
			if err := h.Redis.UnmarshalCaddyfile(d); err != nil {
				return err
			}
		case "timeout":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			dur, err := cfparse.PositiveDuration(d, "timeout", v)
			if err != nil {
				return err
			}
			h.Timeout = caddy.Duration(dur)
		case "on_error":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if _, err := parseFailureMode(v); err != nil {
				return d.Err(err.Error())
			}
			h.OnError = v
		case "instances":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.PositiveInt(d, "instances", v)
			if err != nil {
				return err
			}
			h.Instances = n
		case "hash_tag":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			h.HashTag = v
		case "headers":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if _, err := parseHeaderMode(v); err != nil {
				return d.Err(err.Error())
			}
			h.Headers = v
		case "status":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.Int(d, "status", v)
			if err != nil {
				return err
			}
			if n < 400 || n > 599 {
				return d.Errf("invalid status '%s': must be an HTTP error status (400-599)", v)
			}
			h.Status = n
		case "log_keys":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.LogKeys = true
		case "max_keys":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.PositiveInt(d, "max_keys", v)
			if err != nil {
				return err
			}
			h.MaxKeys = n
		default:
			return d.Errf("unrecognized subdirective '%s'", name)
		}
	}
	if len(h.Zones) == 0 {
		return d.Err("ratelimit needs at least one zone")
	}
	return nil
}

// parseZone reads `zone <name> { ... }` at the dispenser's current token.
func parseZone(d *caddyfile.Dispenser) (*Zone, error) {
	if !d.NextArg() {
		return nil, d.ArgErr()
	}
	z := &Zone{Name: d.Val()}
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	if !zoneNameRE.MatchString(z.Name) {
		return nil, d.Errf("invalid zone name '%s': use letters, digits, '_' and '-'", z.Name)
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if seen[name] {
			return nil, d.Errf("zone '%s': duplicate subdirective '%s'", z.Name, name)
		}
		seen[name] = true
		switch name {
		case "key":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			z.Key = v
		case "events", "burst":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			if isTemplate(v) {
				z.setDynamic(name, v)
				continue
			}
			n, err := cfparse.Int64(d, name, v)
			if err != nil {
				return nil, err
			}
			if name == "events" && n <= 0 {
				return nil, d.Errf("invalid events '%s': must be a positive integer", v)
			}
			if name == "burst" && n < 0 {
				return nil, d.Errf("invalid burst '%s': must be a non-negative integer", v)
			}
			if err := limiter.CheckEvents(name, n); err != nil {
				return nil, cfparse.At(d, fmt.Errorf("invalid %w", err))
			}
			if name == "events" {
				z.Events = n
			} else {
				z.Burst = n
			}
		case "window":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			if isTemplate(v) {
				z.setDynamic(name, v)
				continue
			}
			dur, err := cfparse.PositiveDuration(d, "window", v)
			if err != nil {
				return nil, err
			}
			if err := limiter.CheckWindow(dur); err != nil {
				return nil, cfparse.At(d, fmt.Errorf("invalid %w", err))
			}
			z.Window = caddy.Duration(dur)
		case "algorithm":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			if !validAlgorithm(v) {
				return nil, d.Errf("unknown algorithm '%s': must be token_bucket, sliding_window, fixed_window, sliding_log or leaky_bucket", v)
			}
			z.Algorithm = v
		case "cost":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			if !strings.Contains(v, "{") {
				n, err := parseCost(v)
				if err != nil {
					return nil, d.Err(err.Error())
				}
				if n > limiter.MaxEvents {
					return nil, d.Errf("invalid cost '%s': must be at most 2^50 (%d)", v, int64(limiter.MaxEvents))
				}
			}
			z.Cost = caddyhttp.WeakString(v)
		case "match":
			if d.NextArg() {
				return nil, d.ArgErr()
			}
			set, err := caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			if err != nil {
				return nil, err
			}
			if len(set) == 0 {
				return nil, d.Errf("zone '%s': match needs at least one matcher", z.Name)
			}
			z.MatchRaw = set
		case "count_status":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return nil, d.ArgErr()
			}
			for _, a := range args {
				n, err := cfparse.Int(d, "count_status", a)
				if err != nil {
					return nil, err
				}
				if n < 100 || n > 599 {
					return nil, d.Errf("invalid count_status '%s': must be an HTTP status (100-599)", a)
				}
				z.CountStatus = append(z.CountStatus, n)
			}
		case "on_error":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			if _, err := parseFailureMode(v); err != nil {
				return nil, d.Err(err.Error())
			}
			z.OnError = v
		case "approximate":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return nil, err
			}
			dur, err := cfparse.PositiveDuration(d, "approximate", v)
			if err != nil {
				return nil, err
			}
			z.Approximate = caddy.Duration(dur)
		case "dry_run":
			if d.NextArg() {
				return nil, d.ArgErr()
			}
			z.DryRun = true
		case "plans":
			p, err := parsePlans(d)
			if err != nil {
				return nil, err
			}
			z.Plans = p
		default:
			return nil, d.Errf("zone '%s': unrecognized subdirective '%s'", z.Name, name)
		}
	}
	switch {
	case z.Key == "":
		return nil, d.Errf("zone '%s': key is required", z.Name)
	case z.Events == 0 && (z.Dynamic == nil || z.Dynamic.Events == ""):
		return nil, d.Errf("zone '%s': events is required", z.Name)
	case z.Window == 0 && (z.Dynamic == nil || z.Dynamic.Window == ""):
		return nil, d.Errf("zone '%s': window is required", z.Name)
	case z.Approximate > 0 && !approxAlgorithm(z.Algorithm):
		return nil, d.Errf("zone '%s': approximate works with token_bucket, sliding_window and fixed_window, not %s", z.Name, z.Algorithm)
	}
	if err := z.checkBounds(); err != nil { // what the values make together
		return nil, d.Errf("zone '%s': %v", z.Name, err)
	}
	return z, nil
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)

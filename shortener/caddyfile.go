package shortener

import (
	"math"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
)

func init() {
	caddy.RegisterModule(Handler{})
	httpcaddyfile.RegisterHandlerDirective("shortener", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("shortener", httpcaddyfile.Before, "respond")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var m Handler
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return &m, err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens: it reads
// and assigns, then validate judges the whole, naming the line of a bad
// setting. Syntax:
//
//	shortener [<matcher>] {
//	    store         postgres <dsn> | embedded [<path>]
//	    redis         <url> | redis { ... }
//	    status        301|302|307|308
//	    cache_control <value>
//	    local_cache   <entries> <ttl> | off
//	    cache_ttl     <duration>
//	    negative_ttl  <duration>
//	    codes         random|sequential
//	    code_length   <n>
//	    block_size    <n>
//	    base_url      <url>
//	    allow_schemes <scheme...>
//	    deny_hosts    <host...>
//	    deny_private  on|off
//	    api           <path>
//	    api_key       <key...>
//	    api_read_key  <key...>
//	    ui            <path> [{ session_max_age <d>; session_idle <d> }]
//	    source_header
//	    clicks        on|off
//	    clicks_buffer <n>
//	    clicks_batch  <n> <interval>
//	    clicks_stream_maxlen <n>
//	    clicks_buffer_bytes <size>
//	    clicks_stream_bytes <size>
//	    clicks_referrers <n>
//	    clicks_retention <duration>
//	    clicks_hourly_retention <duration>
//	    clicks_geoip  <path>
//	    code_filter   on|off
//	    code_filter_sync <interval>
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	pos := positions{}
	for d.NextBlock(0) {
		name := d.Val()
		if seen[name] && name != "api_key" && name != "api_read_key" && name != "deny_hosts" {
			return d.Errf("duplicate subdirective '%s'", name)
		}
		seen[name] = true
		pos[name] = cfparse.PosOf(d)
		switch name {
		case "store":
			args := d.RemainingArgs()
			if len(args) == 0 || len(args) > 2 && (args[0] == "postgres" || args[0] == "embedded") {
				return d.ArgErr()
			}
			h.Store = args[0]
			switch {
			case len(args) == 2 && h.Store == "postgres":
				h.DSN = args[1]
			case len(args) == 2 && h.Store == "embedded":
				h.Path = args[1]
			}
		case "redis":
			h.Redis = new(redispool.Config)
			if err := h.Redis.UnmarshalCaddyfile(d); err != nil {
				return err
			}
		case "status":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return d.Errf("invalid status '%s': not a number", v)
			}
			h.Status = n
		case "cache_control":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			h.CacheControl = v
		case "local_cache":
			args := d.RemainingArgs()
			switch {
			case len(args) == 1 && args[0] == "off":
				h.LocalCacheOff = true
			case len(args) == 2:
				n, err := cfparse.PositiveInt(d, "local_cache entries", args[0])
				if err != nil {
					return err
				}
				ttl, err := cfparse.PositiveDuration(d, "local_cache ttl", args[1])
				if err != nil {
					return err
				}
				h.LocalCacheEntries, h.LocalCacheTTL = n, caddy.Duration(ttl)
			default:
				return d.Err("local_cache takes <entries> <ttl> or off")
			}
		case "cache_ttl", "negative_ttl":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			dur, err := cfparse.PositiveDuration(d, name, v)
			if err != nil {
				return err
			}
			if name == "cache_ttl" {
				h.CacheTTL = caddy.Duration(dur)
			} else {
				h.NegativeTTL = caddy.Duration(dur)
			}
		case "codes":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			h.Codes = v
		case "code_length", "block_size":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.PositiveInt(d, name, v)
			if err != nil {
				return err
			}
			if name == "code_length" {
				h.CodeLength = n
			} else {
				h.BlockSize = n
			}
		case "base_url":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			h.BaseURL = v
		case "allow_schemes":
			h.AllowSchemes = d.RemainingArgs()
			if len(h.AllowSchemes) == 0 {
				return d.ArgErr()
			}
		case "deny_hosts":
			hosts := d.RemainingArgs()
			if len(hosts) == 0 {
				return d.ArgErr()
			}
			for _, host := range hosts {
				pos["deny_hosts "+host] = cfparse.PosOf(d)
			}
			h.DenyHosts = append(h.DenyHosts, hosts...)
		case "deny_private":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if v != "on" && v != "off" {
				return d.Errf("invalid deny_private '%s': want on or off", v)
			}
			on := v == "on"
			h.DenyPrivate = &on
		case "forward_query":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if v != "on" && v != "off" {
				return d.Errf("invalid forward_query '%s': want on or off", v)
			}
			h.ForwardQuery = v == "on"
		case "api":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			h.API = v
		case "ui":
			if err := h.unmarshalUI(d, pos); err != nil {
				return err
			}
		case "api_key":
			keys, err := appendKeys(d, pos, name, h.APIKeys)
			if err != nil {
				return err
			}
			h.APIKeys = keys
		case "api_read_key":
			keys, err := appendKeys(d, pos, name, h.APIReadKeys)
			if err != nil {
				return err
			}
			h.APIReadKeys = keys
		case "source_header":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.SourceHeader = true
		case "clicks":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if v != "on" && v != "off" {
				return d.Errf("invalid clicks '%s': want on or off", v)
			}
			h.ClicksOff = v == "off"
		case "clicks_buffer", "clicks_stream_maxlen":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.PositiveInt(d, name, v)
			if err != nil {
				return err
			}
			if name == "clicks_buffer" {
				h.ClicksBuffer = n
			} else {
				h.ClicksStreamMaxLen = int64(n)
			}
		case "clicks_batch":
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.ArgErr()
			}
			n, err := cfparse.PositiveInt(d, "clicks_batch size", args[0])
			if err != nil {
				return err
			}
			interval, err := cfparse.PositiveDuration(d, "clicks_batch interval", args[1])
			if err != nil {
				return err
			}
			h.ClicksBatch, h.ClicksInterval = n, caddy.Duration(interval)
		case "clicks_buffer_bytes", "clicks_stream_bytes":
			if err := h.unmarshalClicksBytes(d, name); err != nil {
				return err
			}
		case "clicks_referrers":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			n, err := cfparse.PositiveInt(d, name, v)
			if err != nil {
				return err
			}
			h.ClicksReferrers = n
		case "clicks_retention", "clicks_hourly_retention":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			dur, err := cfparse.PositiveDuration(d, name, v)
			if err != nil {
				return err
			}
			if name == "clicks_retention" {
				h.ClicksRetention = caddy.Duration(dur)
			} else {
				h.ClicksHourlyRetention = caddy.Duration(dur)
			}
		case "clicks_geoip":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if v == "" {
				return d.Err("invalid clicks_geoip '': want the path of a GeoIP file")
			}
			h.ClicksGeoIP = v
		case "code_filter":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			if v != "on" && v != "off" {
				return d.Errf("invalid code_filter '%s': want on or off", v)
			}
			h.CodeFilterOff = v == "off"
		case "code_filter_sync":
			v, err := cfparse.OneArg(d)
			if err != nil {
				return err
			}
			dur, err := cfparse.PositiveDuration(d, name, v)
			if err != nil {
				return err
			}
			h.CodeFilterSync = caddy.Duration(dur)
		default:
			return d.Errf("unrecognized subdirective '%s'", name)
		}
	}
	return h.validate(pos)
}

// unmarshalClicksBytes reads a size (`8MiB`, `128MB`, `65536`) as
// request_body's max_size does.
func (h *Handler) unmarshalClicksBytes(d *caddyfile.Dispenser, name string) error {
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return d.Errf("invalid %s '%s': must be a positive size like 8MiB", name, v)
	}
	if name == "clicks_stream_bytes" {
		h.ClicksStreamBytes = int64(n)
	} else {
		h.ClicksBufferBytes = int64(n)
	}
	return nil
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)

// appendKeys reads the keys of one api_key or api_read_key line (name)
// onto keys, recording the line of each as "<name> #<n>" in pos.
func appendKeys(d *caddyfile.Dispenser, pos positions, name string, keys []string) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return keys, d.ArgErr()
	}
	for i := range args {
		pos[name+" #"+strconv.Itoa(len(keys)+i+1)] = cfparse.PosOf(d)
	}
	return append(keys, args...), nil
}

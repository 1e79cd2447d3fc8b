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

	// The shortener's modules outside the http app, registered with it:
	// events.handlers.shortener_webhooks and tls.permission.shortener.
	_ "github.com/edgekit/caddy-edgekit/shortener/hookevents"
	_ "github.com/edgekit/caddy-edgekit/shortener/ondemand"
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
//	    app_schemes   <scheme...>
//	    not_found_redirect <url>
//	    root_redirect <url>
//	    app_links     { apple_app_site_association <file>; assetlinks <file> }
//	    webhooks      [{ allow_private <prefix...>; timeout <d>; concurrency <n>; retention <d> }]
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	r := &reading{Handler: h, pos: positions{}}
	if err := handlerBlock.Parse(d, r); err != nil {
		return err
	}
	return h.validate(r.pos)
}

// reading is one run of UnmarshalCaddyfile: the handler it sets up and
// where each setting was read, so that validate can name the line.
type reading struct {
	*Handler
	pos positions
}

// handlerBlock is the subdirectives of `shortener { ... }`.
var handlerBlock = cfparse.Block[reading]{
	Repeatable: []string{"api_key", "api_read_key", "deny_hosts"},
	Each:       func(r *reading, d *caddyfile.Dispenser) { r.pos[d.Val()] = cfparse.PosOf(d) },
	Subdirectives: cfparse.Table[reading]{
		"store":                   (*reading).unmarshalStore,
		"redis":                   (*reading).unmarshalRedis,
		"status":                  (*reading).unmarshalStatus,
		"cache_control":           (*reading).unmarshalCacheControl,
		"local_cache":             (*reading).unmarshalLocalCache,
		"cache_ttl":               (*reading).unmarshalCacheTTL,
		"negative_ttl":            (*reading).unmarshalNegativeTTL,
		"codes":                   (*reading).unmarshalCodes,
		"code_length":             (*reading).unmarshalCodeLength,
		"block_size":              (*reading).unmarshalBlockSize,
		"base_url":                (*reading).unmarshalBaseURL,
		"allow_schemes":           (*reading).unmarshalAllowSchemes,
		"deny_hosts":              (*reading).unmarshalDenyHosts,
		"deny_private":            (*reading).unmarshalDenyPrivate,
		"forward_query":           (*reading).unmarshalForwardQuery,
		"api":                     (*reading).unmarshalAPI,
		"api_key":                 (*reading).unmarshalAPIKey,
		"api_read_key":            (*reading).unmarshalAPIReadKey,
		"ui":                      (*reading).unmarshalUI,
		"source_header":           (*reading).unmarshalSourceHeader,
		"clicks":                  (*reading).unmarshalClicks,
		"clicks_buffer":           (*reading).unmarshalClicksBuffer,
		"clicks_batch":            (*reading).unmarshalClicksBatch,
		"clicks_stream_maxlen":    (*reading).unmarshalClicksStreamMaxLen,
		"clicks_buffer_bytes":     (*reading).unmarshalClicksBufferBytes,
		"clicks_stream_bytes":     (*reading).unmarshalClicksStreamBytes,
		"clicks_referrers":        (*reading).unmarshalClicksReferrers,
		"clicks_retention":        (*reading).unmarshalClicksRetention,
		"clicks_hourly_retention": (*reading).unmarshalClicksHourlyRetention,
		"clicks_geoip":            (*reading).unmarshalClicksGeoIP,
		"code_filter":             (*reading).unmarshalCodeFilter,
		"code_filter_sync":        (*reading).unmarshalCodeFilterSync,
		"app_schemes":             (*reading).unmarshalAppSchemes,
		"not_found_redirect":      (*reading).unmarshalNotFoundRedirect,
		"root_redirect":           (*reading).unmarshalRootRedirect,
		"app_links":               (*reading).unmarshalAppLinks,
		"webhooks":                (*reading).unmarshalWebhooks,
		"domain_zones":            (*reading).unmarshalDomainZones,
	},
}

// unmarshalStore reads `store postgres <dsn> | embedded [<path>]`; another
// store's name is for validate to judge.
func (r *reading) unmarshalStore(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) == 0 || len(args) > 2 && (args[0] == "postgres" || args[0] == "embedded") {
		return d.ArgErr()
	}
	r.Store = args[0]
	switch {
	case len(args) == 2 && r.Store == "postgres":
		r.DSN = args[1]
	case len(args) == 2 && r.Store == "embedded":
		r.Path = args[1]
	}
	return nil
}

// unmarshalRedis reads `redis <url>` or `redis { ... }`.
func (r *reading) unmarshalRedis(d *caddyfile.Dispenser) error {
	r.Redis = new(redispool.Config)
	return r.Redis.UnmarshalCaddyfile(d)
}

// unmarshalStatus reads `status <code>`.
func (r *reading) unmarshalStatus(d *caddyfile.Dispenser) error {
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return d.Errf("invalid status '%s': not a number", v)
	}
	r.Status = n
	return nil
}

// unmarshalCacheControl reads `cache_control <value>`.
func (r *reading) unmarshalCacheControl(d *caddyfile.Dispenser) (err error) {
	r.CacheControl, err = cfparse.OneArg(d)
	return err
}

// unmarshalLocalCache reads `local_cache <entries> <ttl> | off`.
func (r *reading) unmarshalLocalCache(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	switch {
	case len(args) == 1 && args[0] == "off":
		r.LocalCacheOff = true
	case len(args) == 2:
		n, err := cfparse.PositiveInt(d, "local_cache entries", args[0])
		if err != nil {
			return err
		}
		ttl, err := cfparse.PositiveDuration(d, "local_cache ttl", args[1])
		if err != nil {
			return err
		}
		r.LocalCacheEntries, r.LocalCacheTTL = n, caddy.Duration(ttl)
	default:
		return d.Err("local_cache takes <entries> <ttl> or off")
	}
	return nil
}

// unmarshalCacheTTL reads `cache_ttl <duration>`.
func (r *reading) unmarshalCacheTTL(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	r.CacheTTL = caddy.Duration(dur)
	return err
}

// unmarshalNegativeTTL reads `negative_ttl <duration>`.
func (r *reading) unmarshalNegativeTTL(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	r.NegativeTTL = caddy.Duration(dur)
	return err
}

// unmarshalCodes reads `codes random|sequential`.
func (r *reading) unmarshalCodes(d *caddyfile.Dispenser) (err error) {
	r.Codes, err = cfparse.OneArg(d)
	return err
}

// unmarshalCodeLength reads `code_length <n>`.
func (r *reading) unmarshalCodeLength(d *caddyfile.Dispenser) (err error) {
	r.CodeLength, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalBlockSize reads `block_size <n>`.
func (r *reading) unmarshalBlockSize(d *caddyfile.Dispenser) (err error) {
	r.BlockSize, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalBaseURL reads `base_url <url>`.
func (r *reading) unmarshalBaseURL(d *caddyfile.Dispenser) (err error) {
	r.BaseURL, err = cfparse.OneArg(d)
	return err
}

// unmarshalAllowSchemes reads `allow_schemes <scheme...>`.
func (r *reading) unmarshalAllowSchemes(d *caddyfile.Dispenser) (err error) {
	r.AllowSchemes, err = cfparse.Args(d)
	return err
}

// unmarshalDenyHosts reads one `deny_hosts <host...>` line, recording the
// line of each entry as "deny_hosts <entry>".
func (r *reading) unmarshalDenyHosts(d *caddyfile.Dispenser) error {
	hosts, err := cfparse.Args(d)
	if err != nil {
		return err
	}
	for _, host := range hosts {
		r.pos["deny_hosts "+host] = cfparse.PosOf(d)
	}
	r.DenyHosts = append(r.DenyHosts, hosts...)
	return nil
}

// unmarshalDenyPrivate reads `deny_private on|off`.
func (r *reading) unmarshalDenyPrivate(d *caddyfile.Dispenser) error {
	on, err := cfparse.OnOff(d)
	if err != nil {
		return err
	}
	r.DenyPrivate = &on
	return nil
}

// unmarshalForwardQuery reads `forward_query on|off`.
func (r *reading) unmarshalForwardQuery(d *caddyfile.Dispenser) (err error) {
	r.ForwardQuery, err = cfparse.OnOff(d)
	return err
}

// unmarshalAPI reads `api <path>`.
func (r *reading) unmarshalAPI(d *caddyfile.Dispenser) (err error) {
	r.API, err = cfparse.OneArg(d)
	return err
}

// unmarshalAPIKey reads one `api_key <key...>` line.
func (r *reading) unmarshalAPIKey(d *caddyfile.Dispenser) (err error) {
	r.APIKeys, err = appendKeys(d, r.pos, "api_key", r.APIKeys)
	return err
}

// unmarshalAPIReadKey reads one `api_read_key <key...>` line.
func (r *reading) unmarshalAPIReadKey(d *caddyfile.Dispenser) (err error) {
	r.APIReadKeys, err = appendKeys(d, r.pos, "api_read_key", r.APIReadKeys)
	return err
}

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

// unmarshalSourceHeader reads `source_header`.
func (r *reading) unmarshalSourceHeader(d *caddyfile.Dispenser) error {
	if err := cfparse.NoArgs(d); err != nil {
		return err
	}
	r.SourceHeader = true
	return nil
}

// unmarshalClicks reads `clicks on|off`.
func (r *reading) unmarshalClicks(d *caddyfile.Dispenser) error {
	on, err := cfparse.OnOff(d)
	if err != nil {
		return err
	}
	r.ClicksOff = !on
	return nil
}

// unmarshalClicksBuffer reads `clicks_buffer <n>`.
func (r *reading) unmarshalClicksBuffer(d *caddyfile.Dispenser) (err error) {
	r.ClicksBuffer, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalClicksBatch reads `clicks_batch <n> <interval>`.
func (r *reading) unmarshalClicksBatch(d *caddyfile.Dispenser) error {
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
	r.ClicksBatch, r.ClicksInterval = n, caddy.Duration(interval)
	return nil
}

// unmarshalClicksStreamMaxLen reads `clicks_stream_maxlen <n>`.
func (r *reading) unmarshalClicksStreamMaxLen(d *caddyfile.Dispenser) error {
	n, err := cfparse.PositiveIntArg(d)
	r.ClicksStreamMaxLen = int64(n)
	return err
}

// unmarshalClicksBufferBytes reads `clicks_buffer_bytes <size>`.
func (r *reading) unmarshalClicksBufferBytes(d *caddyfile.Dispenser) (err error) {
	r.ClicksBufferBytes, err = sizeArg(d)
	return err
}

// unmarshalClicksStreamBytes reads `clicks_stream_bytes <size>`.
func (r *reading) unmarshalClicksStreamBytes(d *caddyfile.Dispenser) (err error) {
	r.ClicksStreamBytes, err = sizeArg(d)
	return err
}

// sizeArg reads the one argument of the current subdirective as a size
// (`8MiB`, `128MB`, `65536`), as request_body's max_size does.
func sizeArg(d *caddyfile.Dispenser) (int64, error) {
	name := d.Val()
	v, err := cfparse.OneArg(d)
	if err != nil {
		return 0, err
	}
	n, err := humanize.ParseBytes(v)
	if err != nil || n == 0 || n > math.MaxInt64 {
		return 0, d.Errf("invalid %s '%s': must be a positive size like 8MiB", name, v)
	}
	return int64(n), nil
}

// unmarshalClicksReferrers reads `clicks_referrers <n>`.
func (r *reading) unmarshalClicksReferrers(d *caddyfile.Dispenser) (err error) {
	r.ClicksReferrers, err = cfparse.PositiveIntArg(d)
	return err
}

// unmarshalClicksRetention reads `clicks_retention <duration>`.
func (r *reading) unmarshalClicksRetention(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	r.ClicksRetention = caddy.Duration(dur)
	return err
}

// unmarshalClicksHourlyRetention reads `clicks_hourly_retention <duration>`.
func (r *reading) unmarshalClicksHourlyRetention(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	r.ClicksHourlyRetention = caddy.Duration(dur)
	return err
}

// unmarshalClicksGeoIP reads `clicks_geoip <path>`.
func (r *reading) unmarshalClicksGeoIP(d *caddyfile.Dispenser) error {
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	if v == "" {
		return d.Err("invalid clicks_geoip '': want the path of a GeoIP file")
	}
	r.ClicksGeoIP = v
	return nil
}

// unmarshalCodeFilter reads `code_filter on|off`.
func (r *reading) unmarshalCodeFilter(d *caddyfile.Dispenser) error {
	on, err := cfparse.OnOff(d)
	if err != nil {
		return err
	}
	r.CodeFilterOff = !on
	return nil
}

// unmarshalCodeFilterSync reads `code_filter_sync <interval>`.
func (r *reading) unmarshalCodeFilterSync(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	r.CodeFilterSync = caddy.Duration(dur)
	return err
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)

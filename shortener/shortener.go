// Package shortener is the http.handlers.shortener Caddy module:
// short links served as redirects.
package shortener

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/errroute"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// Defaults of the handler's settings.
const (
	DefaultStatus         = http.StatusFound
	DefaultCacheControl   = "private, max-age=0"
	DefaultLocalEntries   = 10000
	DefaultLocalTTL       = 5 * time.Second
	DefaultCacheTTL       = 24 * time.Hour
	DefaultNegativeTTL    = 60 * time.Second
	DefaultCodes          = "random"
	DefaultCodeLength     = 7
	DefaultBlockSize      = 1000
	DefaultRedisKeyPrefix = "shortener"
)

// Handler serves short links: `GET|HEAD /<code>` answers a redirect to the
// link's long URL from an in-process cache, Redis or the store, and an
// optional management API creates, reads and revokes links.
//
// Requests the handler does not answer go to the next handler: methods other
// than GET and HEAD outside the API, and paths ending in "/" (such as the
// site root). Any other path is treated as a code: its last segment is
// looked up, and a segment that cannot be a code (wrong characters, longer
// than 64) answers 404 without touching any cache or store.
type Handler struct {
	// Where links are stored: `postgres` (with `dsn`) for several Caddy
	// instances, or `embedded` (a bbolt file at `path`) for one instance.
	// Default: `embedded`.
	Store string `json:"store,omitempty"`

	// PostgreSQL DSN of the `postgres` store, e.g.
	// `postgres://user:pass@db:5432/links`. Accepts global placeholders
	// (`{env.DATABASE_URL}`), expanded at provision; never logged.
	DSN string `json:"dsn,omitempty"`

	// File of the `embedded` store. Default: `shortener.db` in the `edgekit`
	// folder of Caddy's data directory.
	Path string `json:"path,omitempty"`

	// Optional shared Redis: a link cache for every instance, negative
	// entries for unknown codes, and the pub/sub channel
	// `<key_prefix>:invalidate` that drops revoked and created codes from
	// every instance's local cache. Its `key_prefix` defaults to `shortener`.
	Redis *redispool.Config `json:"redis,omitempty"`

	// Status of a redirect: 301, 302, 307 or 308. 302 keeps every click
	// coming back to the shortener (analytics, revocation); 301 and 308 may
	// be cached by browsers forever. Default: `302`.
	Status int `json:"status,omitempty"`

	// Appends the request's query to the long URL of each redirect (after
	// the long URL's own query, joined with `&`, before its fragment),
	// unless the link's `forward_query` says otherwise. A result longer
	// than 2048 bytes redirects to the long URL alone. Default: `false`
	// (`forward_query off`).
	ForwardQuery bool `json:"forward_query,omitempty"`

	// Cache-Control header of redirects. Default: `private, max-age=0`.
	CacheControl string `json:"cache_control,omitempty"`

	// Entries held by the in-process cache (L1), links and unknown codes
	// alike. Default: `10000`.
	LocalCacheEntries int `json:"local_cache_entries,omitempty"`

	// How long an L1 entry lives; it bounds how stale an instance can be if
	// an invalidation is missed. Default: `5s`.
	LocalCacheTTL caddy.Duration `json:"local_cache_ttl,omitempty"`

	// Disables the in-process cache (`local_cache off`).
	LocalCacheOff bool `json:"local_cache_off,omitempty"`

	// Lifetime of a link in Redis, never past the link's expiry.
	// Default: `24h`.
	CacheTTL caddy.Duration `json:"cache_ttl,omitempty"`

	// Lifetime of an unknown-code entry in Redis and (at most the L1 TTL) in
	// the in-process cache: a scanner reaches the store at most once per
	// Code per negative_ttl. Default: `60s`.
	NegativeTTL caddy.Duration `json:"negative_ttl,omitempty"`

	// How new codes are made: `random` (code_length base62 characters from
	// crypto/rand, unguessable) or `sequential` (IDs from a store sequence in
	// blocks, base62, 7 characters; short but guessable: anyone can
	// enumerate them). Default: `random`.
	Codes string `json:"codes,omitempty"`

	// Length of random codes. After 5 taken draws the length grows by one.
	// Default: `7`.
	CodeLength int `json:"code_length,omitempty"`

	// Sequential IDs reserved per store round trip. Default: `1000`.
	BlockSize int `json:"block_size,omitempty"`

	// Origin (and optional path prefix) of short URLs in API answers, e.g.
	// `https://sho.rt`. Default: the API request's scheme and host.
	BaseURL string `json:"base_url,omitempty"`

	// Schemes a long URL may have. Default: `http https`.
	AllowSchemes []string `json:"allow_schemes,omitempty"`

	// Hosts refused as link targets: an exact host, or `*.example.com` for
	// every subdomain of example.com (list `example.com` as well to refuse
	// it too). Entries and link hosts are both read as a browser reads a
	// URL host (WHATWG URL standard: percent-decoding, IDNA UTS #46, every
	// IPv4 number form), so `ｅｖｉｌ.com`, `evil。com` and `%65vil.com`
	// match `evil.com`, and `2130706433` or `[::ffff:127.0.0.1]` match
	// `127.0.0.1`. Case-insensitive; a trailing dot is ignored.
	DenyHosts []string `json:"deny_hosts,omitempty"`

	// Refuses new links to literal loopback, private (RFC 1918), shared
	// (100.64.0.0/10), link-local (169.254.0.0/16, fe80::/10),
	// unique-local (fc00::/7) and unspecified addresses (also embedded in
	// IPv4-mapped and NAT64 IPv6 addresses) and to `localhost` and names
	// under `.localhost`. Names are not resolved. Existing links still
	// redirect. Set to false (`deny_private off`) for a shortener of
	// intranet addresses. Default: `true`.
	DenyPrivate *bool `json:"deny_private,omitempty"`

	// Path the management API is mounted under, e.g. `/api`. Absent: no API.
	API string `json:"api,omitempty"`

	// Bearer keys of the API with full access (`Authorization: Bearer <key>`).
	// Accepts global
	// placeholders (`{env.SHORTENER_API_KEY}`), expanded at provision. An API
	// without keys (neither api_keys nor api_read_keys) refuses to load.
	// Each key is at least 16 bytes; a key may not also be an api_read_key.
	APIKeys []string `json:"api_keys,omitempty"`

	// Read-only Bearer keys of the API: they may call GET and HEAD on every
	// endpoint (a link, its stats) and get 403 on any other method
	// (creating, revoking). Same rules as api_keys: at least 16 bytes,
	// global placeholders expanded at provision, and never also listed in
	// api_keys. An API with read keys only is valid: it serves links made
	// elsewhere (another instance on the same store) and can create none.
	APIReadKeys []string `json:"api_read_keys,omitempty"`

	// Path the dashboard is served under, e.g. `/admin` (see
	// docs/dashboard.md). Needs the api; its first segment becomes a
	// reserved code. Absent: no dashboard.
	UI string `json:"ui,omitempty"`

	// How long a dashboard session lasts after signing in, however active.
	// 1m to 30d. Default: `12h`.
	UISessionMaxAge caddy.Duration `json:"ui_session_max_age,omitempty"`

	// How long an unused dashboard session lasts. 1m to ui_session_max_age.
	// Default: `1h` (or ui_session_max_age when shorter).
	UISessionIdle caddy.Duration `json:"ui_session_idle,omitempty"`

	// The secret that signs the dashboard's session cookies (HKDF-SHA-256
	// keys), 32 bytes or more, never kept in the link store; placeholders
	// (`{env.*}`, `{file.*}`) expanded at provision. Instances serving one
	// site share it. Default: none (see ui_secret_file).
	UISecret string `json:"ui_secret,omitempty"`

	// A file holding the secret instead (without its trailing line break).
	// Default: with neither, a random secret created once in Caddy's data
	// directory (`edgekit/shortener_ui_session.key`, mode 0600).
	UISecretFile string `json:"ui_secret_file,omitempty"`

	// The secret before a rotation: it verifies the cookies of the sessions
	// it began (re-issued under the new one at their next use), never signs.
	// Remove it ui_session_max_age after the rotation. Placeholders as
	// ui_secret; one that expands to nothing means none.
	UIPreviousSecret string `json:"ui_previous_secret,omitempty"`

	// Adds `X-Shortener-Source: local|redis|store` to redirects and 404s
	// (opt-in, for debugging caches).
	SourceHeader bool `json:"source_header,omitempty"`

	// Turns click counting off (`clicks off`). When on, every counted
	// redirect (a found 30x to a GET that is not a prefetch) is queued in
	// process and counted in the store in the background: through the
	// Redis stream `<key_prefix>:clicks` when Redis is configured, straight
	// into the store otherwise. The redirect never waits for it; each click
	// is counted once, or dropped and counted in
	// `caddy_shortener_clicks_dropped_total`. Default: on.
	ClicksOff bool `json:"clicks_off,omitempty"`

	// Clicks the in-process buffer holds while they wait for the next
	// flush; a click arriving at a full buffer is dropped and counted in
	// `caddy_shortener_clicks_dropped_total`. Default: `65536`.
	ClicksBuffer int `json:"clicks_buffer,omitempty"`

	// Clicks per flushed batch: a batch leaves when this many are waiting
	// or clicks_interval after the last flush. Default: `500`.
	ClicksBatch int `json:"clicks_batch,omitempty"`

	// Longest wait before buffered clicks are flushed. Default: `1s`.
	ClicksInterval caddy.Duration `json:"clicks_interval,omitempty"`

	// Cap of the Redis click stream in entries of one batch each; only a
	// long consumer outage reaches it. clicks_stream_bytes usually binds
	// first. Default: `1000000`.
	ClicksStreamMaxLen int64 `json:"clicks_stream_maxlen,omitempty"`

	// Bytes of clicks the in-process buffer holds, those being flushed
	// included: each click counts 64 bytes plus its code and referrer host
	// (at most 381). A click past it is dropped and counted
	// (`caddy_shortener_clicks_dropped_total{reason="buffer_full"}`). It is
	// what a crash of the process can lose at most, shown by
	// `caddy_shortener_clicks_buffered_bytes`. 64 KiB to 1 GiB.
	// Default: `8388608` (8 MiB).
	ClicksBufferBytes int64 `json:"clicks_buffer_bytes,omitempty"`

	// Cap of the Redis click stream in bytes: its entries' batch IDs and
	// encoded clicks (at most 64 KiB per entry) plus 64 bytes each. Past
	// it, or past clicks_stream_maxlen, each append trims the oldest
	// entries, and their clicks are counted as dropped
	// (`reason="stream_trimmed"`). 256 KiB to 64 GiB. Default: `134217728`
	// (128 MiB).
	ClicksStreamBytes int64 `json:"clicks_stream_bytes,omitempty"`

	// Named referrer hosts counted per link per UTC day; the clicks of
	// further hosts that day are counted under the host `other`. Exact
	// across instances. 1 to 10000. Default: `100`.
	ClicksReferrers int `json:"clicks_referrers,omitempty"`

	// How long hourly and referrer rollups are kept: rows dated before
	// the UTC day this long ago are deleted in the background (hourly,
	// in pages), each link's all-time total stays. 1d to 36500d.
	// Default: `400d`.
	ClicksRetention caddy.Duration `json:"clicks_retention,omitempty"`

	// How long hourly counters are kept: past it, each link's hours are
	// added to its daily rollup (people and bots per UTC day, kept for
	// clicks_retention) and deleted, in the background. Before it, stats
	// cut whole UTC days only (granularity day, week or month, no tz).
	// 1d to 36500d, at most clicks_retention. Default: `90d` (or
	// clicks_retention if shorter).
	ClicksHourlyRetention caddy.Duration `json:"clicks_hourly_retention,omitempty"`

	// Path of a GeoIP database in MaxMind's format, from which each
	// click's country, region and city are derived: GeoLite2 or GeoIP2
	// Country or City, DB-IP Lite Country or City, or IPinfo Lite (country
	// only). The module downloads nothing and needs no licence key: the
	// operator provides the file, read into memory at start and when it
	// changes (stated every 10s), checked before it replaces the loaded
	// one. A bad file fails the first load; on a reload the last good one
	// stays, with a warning. The address is Caddy's client IP
	// (`trusted_proxies` with `trusted_proxies_strict`); lookups run in the
	// background writer, never on the redirect. `{env.*}` placeholders are
	// replaced. Default: none (every country `unknown`).
	ClicksGeoIP string `json:"clicks_geoip,omitempty"`

	// Turns the code filter off (`code_filter off`). When on, each instance
	// keeps a Bloom filter of every stored code (about 19 bits per link:
	// 23 MB for 10 million, twice that during a rebuild) and answers a code
	// it has never heard of with 404 at once, without Redis or the store,
	// so a scan of random codes costs neither. It is built from the store
	// in the background at start (lookups go to Redis and the store until
	// it is), rebuilt hourly, and kept current by this instance's creates,
	// the invalidation channel and the delta sync. Default: on (with
	// either store).
	CodeFilterOff bool `json:"code_filter_off,omitempty"`

	// How often the code filter reads the links created since its last
	// sync from the store: the longest a link inserted by another writer,
	// or created on an instance whose invalidation message was lost (Redis
	// down, a failover), answers 404 here. When syncs fail, the filter
	// stops answering after one and a half intervals. 100ms to 5s.
	// Default: `2s`.
	CodeFilterSync caddy.Duration `json:"code_filter_sync,omitempty"`

	destinations // rules, variants and app links (destinations.go)
	webhooks     // signed webhooks (webhooks.go)
	domains      // link domains (domains.go)

	store        link.Store
	ownStore     func() error // releases what Provision opened for the store
	rdb          *redispool.Client
	cache        *cache
	direct       errroute.Direct // 404/410 written directly when no error route could shape them
	metrics      *metrics
	logger       *zap.Logger
	policy       urlpolicy.Policy
	cacheControl string
	apiKeys      []apiKey
	baseURL      *url.URL
	reserved     string // first segment of the API path: not a custom code
	ui           *uiConfig
	dataDir      string // tests: Caddy's data directory for the ui's generated secret
	openAPI      []byte // openapi.json with the API mount as its server
	blocks       *link.Blocks
	clicks       *clicks.Recorder // nil: clicks are not counted
	geoPoll      time.Duration    // tests: how often the GeoIP file is stated
	now          func() time.Time
	tuneFilter   func(*filterSyncer) // tests: page size, rebuild interval
	judged       bool                // Validate has run for this load
	verdict      error               // what it said
	onValidate   func()              // tests: called by every run of validate
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.shortener",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision fills defaults, opens the store and Redis, and builds the caches.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	if h.now == nil {
		h.now = time.Now
	}
	h.setDefaults()
	h.blocks = new(link.Blocks)
	h.direct = errroute.New(ctx.Modules())
	if err := h.Validate(); err != nil { // judged here, before opening anything
		return err
	}
	var err error
	if h.metrics, err = newMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("shortener metrics: %w", err)
	}
	repl := caddy.NewReplacer()
	if err := h.provisionKeys(repl); err != nil {
		return err
	}
	if h.BaseURL != "" {
		if h.baseURL, err = url.Parse(strings.TrimSuffix(h.BaseURL, "/")); err != nil {
			return fmt.Errorf("shortener: invalid base_url: %w", err)
		}
	}
	if h.cache, err = newCache(h.localEntries(), time.Duration(h.LocalCacheTTL), time.Duration(h.NegativeTTL), time.Duration(h.CacheTTL), h.now); err != nil {
		return fmt.Errorf("shortener local cache: %w", err)
	}
	if h.store == nil {
		if err := h.openStore(ctx, repl); err != nil {
			return err
		}
	}
	h.cache.useStore(h.store, h.logger)
	if h.UI != "" {
		if err := h.provisionUI(ctx, repl); err != nil {
			return err
		}
	}
	if err := h.startCodeFilter(ctx); err != nil {
		return err
	}
	var prefix string
	if h.Redis != nil {
		cfg := h.Redis.Expand()
		if cfg.KeyPrefix == "" {
			cfg.KeyPrefix = DefaultRedisKeyPrefix
		}
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("shortener: %w", err)
		}
		if h.rdb, err = redispool.Get(cfg); err != nil {
			return fmt.Errorf("shortener: %w", err)
		}
		// Redis is a cache: a Redis that is down at start is logged, not
		// fatal, and lookups go to the store until it answers.
		if err := redispool.Ping(ctx, h.rdb, cfg, 2*time.Second); err != nil {
			h.logger.Warn("redis unavailable at start; links are served from the store until it answers", zap.Error(err))
		}
		prefix = cfg.KeyPrefix
		h.cache.useRedis(h.rdb, prefix, h.logger)
	}
	if !h.ClicksOff {
		if err := h.startClicks(ctx, prefix); err != nil {
			return err
		}
	}
	if err := h.provisionDestinations(ctx); err != nil {
		return err
	}
	if err := h.provisionDomains(); err != nil {
		return err
	}
	return h.provisionWebhooks(ctx)
}

func (h *Handler) setDefaults() {
	if h.Store == "" {
		h.Store = "embedded"
	}
	if h.Status == 0 {
		h.Status = DefaultStatus
	}
	if h.CacheControl == "" {
		h.CacheControl = DefaultCacheControl
	}
	h.cacheControl = h.CacheControl
	if h.LocalCacheEntries == 0 {
		h.LocalCacheEntries = DefaultLocalEntries
	}
	if h.LocalCacheTTL == 0 {
		h.LocalCacheTTL = caddy.Duration(DefaultLocalTTL)
	}
	if h.CacheTTL == 0 {
		h.CacheTTL = caddy.Duration(DefaultCacheTTL)
	}
	if h.NegativeTTL == 0 {
		h.NegativeTTL = caddy.Duration(DefaultNegativeTTL)
	}
	if h.Codes == "" {
		h.Codes = DefaultCodes
	}
	if h.CodeLength == 0 {
		h.CodeLength = DefaultCodeLength
	}
	if h.BlockSize == 0 {
		h.BlockSize = DefaultBlockSize
	}
	h.setClickDefaults()
	h.uiDefaults()
	if len(h.AllowSchemes) == 0 {
		h.AllowSchemes = []string{"http", "https"}
	}
	h.policy, _ = urlpolicy.New(h.AllowSchemes, h.DenyHosts, h.denyPrivate()) // Validate reports a bad entry
	if h.API != "" {
		h.API = "/" + strings.Trim(h.API, "/")
		h.reserved, _, _ = strings.Cut(h.API[1:], "/")
		h.openAPI, _ = openAPIFor(h.API) // the embedded document is tested to parse
	}
}

// clicksCloseTimeout bounds how long Cleanup waits for buffered clicks to
// be flushed (to Redis or the store) at shutdown or reload.
const clicksCloseTimeout = 5 * time.Second

// Cleanup releases what Provision took: it flushes buffered clicks first
// (bounded wait), then the Redis subscription and client, the store (or its
// share of the pooled one).
func (h *Handler) Cleanup() error {
	var errs []error
	h.stopDomains()
	h.stopWebhooks()
	if h.clicks != nil {
		ctx, cancel := context.WithTimeout(context.Background(), clicksCloseTimeout)
		h.clicks.Drain(ctx) // redirects still in flight on a reload
		if err := h.clicks.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shortener: %w", err))
		}
		cancel()
	}
	if h.cache != nil {
		h.cache.close()
	}
	unregisterUI(h)
	if h.rdb != nil {
		errs = append(errs, h.rdb.Release())
		h.rdb = nil
	}
	if h.ownStore != nil {
		errs = append(errs, h.ownStore())
		h.ownStore = nil
	}
	return errors.Join(errs...)
}

// ServeHTTP implements caddyhttp.MiddlewareHandler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	path := r.URL.Path
	if h.ui != nil && pathWithin(path, h.ui.path) {
		return h.serveUI(w, r, path[len(h.ui.path):])
	}
	if h.API != "" && (path == h.API || strings.HasPrefix(path, h.API) && path[len(h.API)] == '/') {
		return h.serveAPI(w, r, path[len(h.API):])
	}
	return h.serveGet(w, r, next)
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

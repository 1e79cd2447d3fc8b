// Package ratelimit is the http.handlers.ratelimit Caddy module: distributed
// rate limiting decided atomically on Redis.
package ratelimit

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/internal/errroute"
	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// Handler limits the rate of requests. Each request is counted in every
// zone that applies to it; all zones are decided in one call to the store,
// all or nothing: when one zone refuses, no zone is charged. A refused
// request gets `status` (429) with `Retry-After`, so `handle_errors` can
// shape the page, and sets the placeholders `{http.ratelimit.zone}` (the
// refusing zone) and `{http.ratelimit.retry_after}` (seconds). A request
// without a valid bearer token is refused with 401 when a template reads
// `{http.ratelimit.jwt.*}` (see JWTKey). Every
// request of a handler whose templates read
// `{http.ratelimit.client_network}` gets it (see ClientNetwork), set
// before they are expanded, so later handlers see it too.
type Handler struct {
	// The quotas. At least one.
	Zones []*Zone `json:"zones,omitempty"`

	// The Redis server or cluster that holds the quotas, shared by every
	// Caddy instance. Keys are `<key_prefix>:<zone>:<digest of the key>`;
	// `key_prefix` defaults to `ratelimit`. Without it, quotas live in this
	// process only: correct for a single Caddy instance, but every instance
	// then counts on its own.
	Redis *redispool.Config `json:"redis,omitempty"`

	// The deadline of one decision's round trip to the store, measured
	// from the moment it is written (time queued in process behind other
	// decisions is not charged; the reply is read until twice this after
	// the write); past it the store has failed and `on_error` applies. A
	// decision that cannot be written in time (1024 waiting, or unsent
	// after 1s + timeout) is refused with 503 and `Retry-After: 1`,
	// whatever `on_error` says. Default: `10ms`.
	Timeout caddy.Duration `json:"timeout,omitempty"`

	// What to do when the store fails (an error, a refused connection or no
	// answer within `timeout`): `open` lets the request through and logs a
	// warning (at most one a second); `closed` refuses it with 503 and
	// `Retry-After: 1`; `local` decides with an in-process limiter of the
	// same algorithm at `events/instances`. A zone's `on_error` overrides
	// it. When at least 5 store calls failed over the current and the
	// previous second and they are at least half of the calls, the store is
	// skipped for 1s, then probed again; a probe that finds the store
	// answering dials the redis block's `min_idle_conns` before requests
	// return to it. A decision that found no connection (a refused dial)
	// is not counted: the requests after it wait for such a probe.
	// Default: `open`.
	OnError string `json:"on_error,omitempty"`

	// How many Caddy instances share the quotas: the `local` fallback gives
	// each instance ⌈events/instances⌉. Default: `1`.
	Instances int `json:"instances,omitempty"`

	// A template expanded per request, such as
	// `{http.request.header.X-Tenant}`: all of a request's keys then share
	// one Redis Cluster slot, so their decision is one atomic call. Without
	// it, zones in different slots are decided with one call per slot. A
	// request carrying a header, cookie or query parameter it reads more
	// than once is refused with 400.
	HashTag string `json:"hash_tag,omitempty"`

	// Which response headers to send: `ietf` (`RateLimit-Policy`,
	// `RateLimit`), `legacy` (`X-RateLimit-Limit`, `X-RateLimit-Remaining`,
	// `X-RateLimit-Reset`), `both` or `none`. `Retry-After` is always sent
	// on a refusal. Default: `both`.
	Headers string `json:"headers,omitempty"`

	// The status of a refused request (400-599). Default: `429`.
	Status int `json:"status,omitempty"`

	// Log the expanded key of refused requests. Off by default: keys are
	// often secrets (API keys) or personal data (IP addresses).
	LogKeys bool `json:"log_keys,omitempty"`

	// The most keys each zone holds in the in-process store (no `redis`)
	// and in the `local` fallback, so a flood of distinct keys cannot
	// exhaust memory. Past it, of the 16 least recently used keys, one
	// whose state equals a fresh one is dropped, else the one that has
	// used the least of its quota: a refused key goes last. Default:
	// `100000`.
	MaxKeys int `json:"max_keys,omitempty"`

	// What a refusal written by the handler carries: `none` (no body) or
	// `problem`, an RFC 9457 `application/problem+json` body with `type`
	// (`about:blank`), `title`, `status`, `detail`, `zone` and
	// `retry_after` (seconds). Error routes take precedence: when
	// `handle_errors` (or an enclosing subroute's errors) could shape the
	// refusal, the handler returns it as an error, as without `body`.
	// Default: `none`.
	Body string `json:"body,omitempty"`

	// Adds up to this fraction of the wait, uniformly at random, to the
	// wait of a refusal: `Retry-After`, `RateLimit`'s `t`,
	// `X-RateLimit-Reset` and `{http.ratelimit.retry_after}` all carry the
	// same jittered wait, so refused clients do not all come back in the
	// same second. Never shortens the wait. 0-1. Default: `0`.
	Jitter float64 `json:"jitter,omitempty"`

	// How much of the client's address `{http.ratelimit.client_network}`
	// keeps, the recommended key of per-client limits (see
	// ClientNetwork). Default: `32` bits of IPv4, `64` of IPv6.
	ClientNetwork *ClientNetwork `json:"client_network,omitempty"`

	// Verify the request's bearer token (a JWT) and expose its claims as
	// `{http.ratelimit.jwt.sub}` and `{http.ratelimit.jwt.claim.<name>}`
	// to the handler's templates (see JWTKey). Default: none.
	JWT *JWTKey `json:"jwt,omitempty"`

	store  limiter.Store       // the quotas: Redis or in-process (a limiter.ZoneMemory)
	local  *limiter.ZoneMemory // the `local` fallback, nil when no zone uses it
	client *redispool.Client
	deny   *denyCache // refusals of the Redis store, answered locally; nil: none
	// carried: each zone's in-process state, by zone index, carried over
	// config reloads (see carryover.go); carryScope: the config load
	carried    []*zoneState
	carryScope any
	// inProcess: store is the memory store (no timeout needed)
	inProcess bool
	// approx: some zone is approximate (decided in process, synced)
	approx bool
	// concurrency: some zone is a concurrency zone (requests hold leases);
	// refresher keeps their leases alive, holds keeps the Redis client
	// until the last is given back (see leases.go)
	concurrency bool
	// thresholds: some zone has `notify` (see thresholds.go)
	thresholds bool
	refresher  *leaseRefresher
	holds      *leaseHolds
	prefix     string
	timeout    time.Duration
	onError    failureMode
	headers    headerMode
	status     int
	network    ClientNetwork // ClientNetwork or its defaults
	// setsNetwork: a template reads {http.ratelimit.client_network}
	setsNetwork bool
	// jwtTag: the hash tag reads a jwt placeholder (see jwtreq.go)
	jwtTag bool

	hashTag   template
	policyAll string // RateLimit-Policy when every zone applies
	breaker   *breaker
	brake     *brakeCache // nil: no brake (a store set by a test)
	events    *eventSink  // nil: no event observed (see events.go)
	warn      *warnLimiter
	// overloaded rate-limits the warnings of overloaded decisions
	overloaded *warnLimiter
	logger     *zap.Logger
	now        func() time.Time

	// direct: whether a refusal may be written rather than returned as an
	// error (only when no error route could shape it).
	direct errroute.Direct

	// pos: where the Caddyfile set each field (nil: JSON), for validate
	pos *cfparse.Positions
	// validated: validate ran on this load, with the verdict invalid;
	// validations counts its runs (tests)
	validated   bool
	invalid     error
	validations int
}

// Defaults.
const (
	DefaultTimeout   = 10 * time.Millisecond
	DefaultStatus    = http.StatusTooManyRequests
	DefaultKeyPrefix = "ratelimit"

	// pingTimeout bounds the Redis check at provision.
	pingTimeout = 500 * time.Millisecond
	// statusClientClosed is the status of a request whose client left
	// while it waited in a leaky bucket (nginx's 499, as reverse_proxy uses).
	statusClientClosed = 499
)

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.ratelimit",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)

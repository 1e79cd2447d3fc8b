// Package redispool holds the Redis connection settings shared by the
// ratelimit and shortener handlers, their Caddyfile syntax, and a pool that
// hands out one redis.UniversalClient per distinct connection config, shared
// across routes and config reloads.
package redispool

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/redact"
	"github.com/edgekit/caddy-edgekit/internal/usagepool"
)

// Config is a Redis connection: a single node, a Sentinel-managed primary or
// a Redis Cluster. Every string field accepts global placeholders such as
// `{env.REDIS_PASSWORD}`, expanded once at provision; secrets never appear in
// errors or logs.
type Config struct {
	// A Redis URL: `redis://[user:password@]host:port/db`, `rediss://` for TLS,
	// or `unix:///path/to.sock`. Either this or `addresses`.
	URL string `json:"url,omitempty"`

	// Node addresses as `host:port`. One address is a single node; several
	// are the seed nodes of a Redis Cluster; with `master_name` they are
	// Sentinel addresses.
	Addresses []string `json:"addresses,omitempty"`

	// The Sentinel master name. Setting it selects Sentinel mode.
	MasterName string `json:"master_name,omitempty"`

	// Treat a single address (or URL) as a Redis Cluster seed node.
	Cluster bool `json:"cluster,omitempty"`

	// ACL username and password. The password is usually `{env.REDIS_PASSWORD}`.
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`

	// Database number (single node and Sentinel only). Default: `0`.
	DB int `json:"db,omitempty"`

	// Connect with TLS (system roots). Implied by a `rediss://` URL.
	TLS bool `json:"tls,omitempty"`

	// Connections per node. Default: go-redis's default (10 per CPU).
	PoolSize int `json:"pool_size,omitempty"`

	// Idle connections kept open per node, dialled in the background: at
	// start, when connections drop, and by the rate limiter before it lets
	// requests back in after an outage, so a burst of requests finds them
	// ready instead of dialling. 1 to 1000, and at most `pool_size` when
	// set. Default: `2`.
	MinIdleConns int `json:"min_idle_conns,omitempty"`

	// Timeouts of one connection. Defaults: `1s` to dial, `500ms` to read and write.
	DialTimeout  caddy.Duration `json:"dial_timeout,omitempty"`
	ReadTimeout  caddy.Duration `json:"read_timeout,omitempty"`
	WriteTimeout caddy.Duration `json:"write_timeout,omitempty"`

	// Prefix of every key the module writes. Each module documents its default.
	KeyPrefix string `json:"key_prefix,omitempty"`

	// OwnBreaker is set by a module that stops calling a failing server
	// and probes it itself: its pool dials whenever asked (see
	// dialfail.go), and it gets a client of its own.
	OwnBreaker bool `json:"-"`
}

// Default connection timeouts: short, because both modules sit on the
// request path and have their own per-call deadlines on top.
const (
	DefaultMinIdleConns = 2
	DefaultDialTimeout  = time.Second
	DefaultReadTimeout  = 500 * time.Millisecond
	DefaultWriteTimeout = 500 * time.Millisecond
)

// Expand returns a copy of c with global placeholders ({env.*}, {file.*}, ...)
// replaced in every string field.
func (c Config) Expand() Config {
	repl := caddy.NewReplacer()
	out := c
	out.URL = repl.ReplaceKnown(c.URL, "")
	out.Addresses = make([]string, len(c.Addresses))
	for i, a := range c.Addresses {
		out.Addresses[i] = repl.ReplaceKnown(a, "")
	}
	out.MasterName = repl.ReplaceKnown(c.MasterName, "")
	out.Username = repl.ReplaceKnown(c.Username, "")
	out.Password = repl.ReplaceKnown(c.Password, "")
	out.KeyPrefix = repl.ReplaceKnown(c.KeyPrefix, "")
	return out
}

// Validate checks the (expanded) config without dialling: the rules of
// checkShape, then the URL. Its errors never contain the password.
func (c Config) Validate() error {
	if err := c.checkShape(); err != nil {
		return err
	}
	_, err := c.Options()
	return err
}

// checkShape is every rule on the fields that holds before placeholders
// are expanded: the Caddyfile parser applies it with the line of the
// block, Validate again on the expanded config.
func (c Config) checkShape() error {
	if c.URL == "" && len(c.Addresses) == 0 {
		return errors.New("redis: a url or at least one address is required (the redis block needs 'url' or 'addresses')")
	}
	if c.URL != "" && len(c.Addresses) > 0 {
		return errors.New("redis: set either url or addresses, not both")
	}
	if c.DB < 0 {
		return fmt.Errorf("redis: invalid db '%d': must be a non-negative integer", c.DB)
	}
	if c.PoolSize < 0 {
		return fmt.Errorf("redis: invalid pool_size '%d': must be a non-negative integer", c.PoolSize)
	}
	if c.MinIdleConns < 0 || c.MinIdleConns > maxMinIdleConns {
		return fmt.Errorf("redis: invalid min_idle_conns '%d': must be 1 to %d", c.MinIdleConns, maxMinIdleConns)
	}
	if c.PoolSize > 0 && c.MinIdleConns > c.PoolSize {
		return fmt.Errorf("redis: invalid min_idle_conns '%d': must be at most pool_size (%d)", c.MinIdleConns, c.PoolSize)
	}
	if c.DB != 0 && c.isCluster() {
		return errors.New("redis: db must be 0 with Redis Cluster")
	}
	return nil
}

// maxMinIdleConns bounds min_idle_conns.
const maxMinIdleConns = 1000

// IdleConns is min_idle_conns or its default.
func (c Config) IdleConns() int {
	if c.MinIdleConns > 0 {
		return c.MinIdleConns
	}
	if c.PoolSize > 0 {
		return min(DefaultMinIdleConns, c.PoolSize)
	}
	return DefaultMinIdleConns
}

func (c Config) isCluster() bool {
	return c.MasterName == "" && (c.Cluster || len(c.Addresses) > 1)
}

// Options turns the expanded config into go-redis options.
func (c Config) Options() (*redis.UniversalOptions, error) {
	opts := &redis.UniversalOptions{
		Addrs:        c.Addresses,
		MasterName:   c.MasterName,
		Username:     c.Username,
		Password:     c.Password,
		DB:           c.DB,
		PoolSize:     c.PoolSize,
		MinIdleConns: c.IdleConns(),
		DialTimeout:  durationOr(c.DialTimeout, DefaultDialTimeout),
		ReadTimeout:  durationOr(c.ReadTimeout, DefaultReadTimeout),
		WriteTimeout: durationOr(c.WriteTimeout, DefaultWriteTimeout),
		// Our callers put their own deadline on every call.
		ContextTimeoutEnabled: true,
		IsClusterMode:         c.Cluster,
		// A decision must fail fast so the caller's failure mode applies;
		// retries would multiply the deadline.
		MaxRetries: 1,
		// A refused dial is reported at once, not after four more tries
		// 100ms apart: the caller's deadline would end first, and the
		// rate limiter tells a dial that failed from a decision that did.
		DialerRetries: 1,
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redis: invalid url: %s", parseFailure(c.URL))
		}
		switch u.Scheme {
		case "redis", "rediss", "unix":
		default:
			return nil, fmt.Errorf("redis: unsupported url scheme %q (want redis, rediss or unix)", u.Scheme)
		}
		simple, err := redis.ParseURL(c.URL)
		if err != nil {
			return nil, fmt.Errorf("redis: invalid url %s: %s", Redact(c.URL), redactErr(err, c.URL))
		}
		opts.Addrs = []string{simple.Addr}
		if simple.Network == "unix" {
			sock := simple.Addr
			opts.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			}
		}
		if opts.Username == "" {
			opts.Username = simple.Username
		}
		if opts.Password == "" {
			opts.Password = simple.Password
		}
		if opts.DB == 0 {
			opts.DB = simple.DB
		}
		if simple.TLSConfig != nil {
			opts.TLSConfig = simple.TLSConfig
		}
	}
	if c.TLS && opts.TLSConfig == nil {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.OwnBreaker {
		opts.Dialer = deferDialErrors(baseDialer(opts))
	}
	return opts, nil
}

func durationOr(d caddy.Duration, def time.Duration) time.Duration {
	if d > 0 {
		return time.Duration(d)
	}
	return def
}

// Key identifies a connection config in the pool: a digest, so the pool
// never keeps the password in clear as a map key.
func (c Config) Key() string {
	norm := c
	norm.KeyPrefix = "" // the prefix is per module, the connection is not
	b, _ := json.Marshal(norm)
	if c.OwnBreaker {
		b = append(b, " own breaker"...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Describe names the connection for logs and errors, without secrets.
func (c Config) Describe() string {
	switch {
	case c.URL != "":
		return Redact(c.URL)
	case c.MasterName != "":
		return "sentinel " + c.MasterName + " via " + strings.Join(c.Addresses, ",")
	case c.isCluster():
		return "cluster " + strings.Join(c.Addresses, ",")
	default:
		return strings.Join(c.Addresses, ",")
	}
}

// pool shares clients across handlers and config reloads: a new config that
// asks for the same connection gets the live client, and the last Cleanup
// closes it.
var pool = usagepool.New(redis.UniversalClient.Close)

// Client is a pooled client. Release it in the module's Cleanup.
type Client struct {
	redis.UniversalClient
	use *usagepool.Handle[redis.UniversalClient]
}

// Release gives the client back to the pool; the last release closes it.
// A second call does nothing.
func (c *Client) Release() error {
	if c == nil {
		return nil
	}
	return c.use.Release()
}

// Get returns the shared client for cfg (already expanded and validated),
// creating it on first use. It does not dial: callers decide whether an
// unreachable Redis at start is an error (see Ping).
func Get(cfg Config) (*Client, error) {
	key := cfg.Key()
	c, use, err := pool.LoadOrNew(key, func() (redis.UniversalClient, error) {
		opts, err := cfg.Options()
		if err != nil {
			return nil, err
		}
		return newClient(cfg, opts), nil
	})
	if err != nil {
		return nil, err
	}
	return &Client{UniversalClient: c, use: use}, nil
}

// clusterReloadInterval is how often a cluster client refreshes its slot
// map while in use. go-redis reloads it on MOVED and READONLY replies, not
// when a master stops answering, so after a failover it would dial the dead
// master until the next periodic reload (60s by default).
const clusterReloadInterval = time.Second

func newClient(cfg Config, opts *redis.UniversalOptions) redis.UniversalClient {
	if cfg.isCluster() {
		co := opts.Cluster()
		co.ClusterStateReloadInterval = clusterReloadInterval
		return redis.NewClusterClient(co)
	}
	return redis.NewUniversalClient(opts)
}

// Ping checks that the server answers within timeout. The error names the
// connection without its password.
func Ping(ctx context.Context, c redis.UniversalClient, cfg Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis %s: %s", cfg.Describe(), redact.Forms(redactErr(err, cfg.URL), cfg.Password))
	}
	return nil
}

package redispool

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
)

// UnmarshalCaddyfile reads the `redis` subdirective at the dispenser's
// current token, in either form:
//
//	redis <url>
//	redis {
//	    url           <url>
//	    addresses     <host:port...>
//	    master_name   <name>
//	    cluster
//	    username      <user>
//	    password      <password>
//	    db            <n>
//	    tls
//	    pool_size     <n>
//	    min_idle_conns <n>
//	    dial_timeout  <duration>
//	    read_timeout  <duration>
//	    write_timeout <duration>
//	    key_prefix    <prefix>
//	}
func (c *Config) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		c.URL = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		if d.NextBlock(d.Nesting()) {
			return d.Err("redis takes either a url argument or a block, not both")
		}
		return nil
	}
	if err := configBlock.Parse(d, c); err != nil {
		return err
	}
	return cfparse.At(d, c.checkShape())
}

// configBlock is the subdirectives of `redis { ... }`.
var configBlock = cfparse.Block[Config]{
	Kind: "redis subdirective",
	Subdirectives: cfparse.Table[Config]{
		"url":            func(c *Config, d *caddyfile.Dispenser) error { return stringArg(d, &c.URL) },
		"addresses":      (*Config).unmarshalAddresses,
		"master_name":    func(c *Config, d *caddyfile.Dispenser) error { return stringArg(d, &c.MasterName) },
		"cluster":        func(c *Config, d *caddyfile.Dispenser) error { return flag(d, &c.Cluster) },
		"username":       func(c *Config, d *caddyfile.Dispenser) error { return stringArg(d, &c.Username) },
		"password":       func(c *Config, d *caddyfile.Dispenser) error { return stringArg(d, &c.Password) },
		"db":             func(c *Config, d *caddyfile.Dispenser) error { return intArg(d, &c.DB) },
		"tls":            func(c *Config, d *caddyfile.Dispenser) error { return flag(d, &c.TLS) },
		"pool_size":      func(c *Config, d *caddyfile.Dispenser) error { return intArg(d, &c.PoolSize) },
		"min_idle_conns": (*Config).unmarshalMinIdleConns,
		"dial_timeout":   func(c *Config, d *caddyfile.Dispenser) error { return durationArg(d, &c.DialTimeout) },
		"read_timeout":   func(c *Config, d *caddyfile.Dispenser) error { return durationArg(d, &c.ReadTimeout) },
		"write_timeout":  func(c *Config, d *caddyfile.Dispenser) error { return durationArg(d, &c.WriteTimeout) },
		"key_prefix":     func(c *Config, d *caddyfile.Dispenser) error { return stringArg(d, &c.KeyPrefix) },
	},
}

// unmarshalAddresses reads `addresses <host:port...>`.
func (c *Config) unmarshalAddresses(d *caddyfile.Dispenser) error {
	addrs, err := cfparse.Args(d)
	if err != nil {
		return err
	}
	c.Addresses = addrs
	return nil
}

// unmarshalMinIdleConns reads `min_idle_conns <n>`: 0 is no default, so
// it is refused here (JSON omits it).
func (c *Config) unmarshalMinIdleConns(d *caddyfile.Dispenser) error {
	if err := intArg(d, &c.MinIdleConns); err != nil {
		return err
	}
	if c.MinIdleConns < 1 {
		return d.Errf("redis: invalid min_idle_conns '%d': must be 1 to %d", c.MinIdleConns, maxMinIdleConns)
	}
	return nil
}

// stringArg reads the one argument of the current subdirective into dst.
func stringArg(d *caddyfile.Dispenser, dst *string) error {
	v, err := cfparse.OneArg(d)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// intArg reads the one argument of the current subdirective into dst as
// an integer; its value is judged before any second argument.
func intArg(d *caddyfile.Dispenser, dst *int) error {
	name := d.Val()
	if !d.NextArg() {
		return d.ArgErr()
	}
	n, err := cfparse.Int(d, name, d.Val())
	if err != nil {
		return err
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	*dst = n
	return nil
}

// durationArg reads the one argument of the current subdirective into dst
// as a duration > 0; its value is judged before any second argument.
func durationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	name := d.Val()
	if !d.NextArg() {
		return d.ArgErr()
	}
	dur, err := cfparse.PositiveDuration(d, name, d.Val())
	if err != nil {
		return err
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	*dst = caddy.Duration(dur)
	return nil
}

// flag sets dst for the current subdirective, which takes no argument.
func flag(d *caddyfile.Dispenser, dst *bool) error {
	if err := cfparse.NoArgs(d); err != nil {
		return err
	}
	*dst = true
	return nil
}

// Package cfparse holds the small Caddyfile argument checks both modules'
// parsers share, so that their errors read the same way.
package cfparse

import (
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// OneArg reads exactly one argument of the current subdirective.
func OneArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	v := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return v, nil
}

// PositiveInt parses v as an integer > 0; the error names what and v.
func PositiveInt(d *caddyfile.Dispenser, what, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, d.Errf("invalid %s '%s': must be a positive integer", what, v)
	}
	return n, nil
}

// PositiveDuration parses v as a Caddy duration > 0; the error names what and v.
func PositiveDuration(d *caddyfile.Dispenser, what, v string) (time.Duration, error) {
	dur, err := caddy.ParseDuration(v)
	if err != nil || dur <= 0 {
		return 0, d.Errf("invalid %s '%s': must be a positive duration", what, v)
	}
	return dur, nil
}

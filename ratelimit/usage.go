package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// ZoneUsage keeps each key's usage per period: the units charged and the
// requests refused, recorded by the store in the call that decides (no
// round trip more), read with the admin API's
// /ratelimit/zones/<zone>/usage (JSON, CSV, NDJSON for billing). The key
// is kept in clear in the store (past 256 bytes or when not UTF-8, as
// "sha256:<digest>"): key such a zone by a customer's id (a JWT's `sub`,
// a tenant header), not by a secret. fixed_window zones only (the period
// is the window, or the calendar period); not with `approximate`. In the
// Caddyfile: `usage on [keep <n>]`.
type ZoneUsage struct {
	// How many periods a key's usage is kept: the current one and the n-1
	// before it, at least (a period's usage goes at the key's first charge
	// after n periods of the longest length the zone's period takes: 31
	// days for a month, 25 hours for a day). 1 to 1000. Default: `12`.
	Keep int `json:"keep,omitempty"`
}

// DefaultUsageKeep is ZoneUsage.Keep when unset.
const DefaultUsageKeep = 12

// unmarshalUsage reads `usage on|off [keep <n>]`.
func (z *Zone) unmarshalUsage(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	switch d.Val() {
	case "off":
		z.Usage = nil
		return nil
	case "on":
	default:
		return d.Errf("invalid usage '%s': must be on or off", d.Val())
	}
	z.Usage = &ZoneUsage{}
	if !d.NextArg() {
		return nil
	}
	if d.Val() != "keep" || !d.NextArg() {
		return d.Errf("usage on takes only keep <periods>")
	}
	n, err := strconv.Atoi(d.Val())
	if err != nil {
		return d.Errf("invalid usage keep '%s': must be a number of periods", d.Val())
	}
	z.Usage.Keep = n
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// checkUsage checks `usage`.
func (z *Zone) checkUsage() error {
	switch {
	case z.Usage == nil:
		return nil
	case z.Algorithm != limiter.FixedWindow:
		return onField("usage", fmt.Errorf("usage needs algorithm fixed_window (its window is the period), not %s", cmp.Or(z.Algorithm, DefaultAlgorithm)))
	case z.Approximate != 0:
		return onField("usage", errors.New("usage does not work with approximate"))
	case z.Usage.Keep < 0 || z.Usage.Keep > 1000:
		return onField("usage", fmt.Errorf("usage keep %d: from 1 to 1000 periods", z.Usage.Keep))
	}
	if keep := z.usageKeep(); keep > limiter.MaxWindow {
		return onField("usage", fmt.Errorf("usage kept %s: at most %s", keep, limiter.MaxWindow))
	}
	return nil
}

// usageKeep is how long the store keeps a period's usage (see ZoneUsage).
func (z *Zone) usageKeep() time.Duration {
	if z.Usage == nil {
		return 0
	}
	n := z.Usage.Keep
	if n == 0 {
		n = DefaultUsageKeep
	}
	longest := time.Duration(z.Window)
	switch u, _ := limiter.ParseCalendarUnit(z.Calendar); u {
	case limiter.CalendarMonth:
		longest = 31 * 24 * time.Hour
	case limiter.CalendarWeek:
		longest = 7*24*time.Hour + time.Hour
	case limiter.CalendarDay:
		longest = 25 * time.Hour
	case limiter.CalendarHour:
		longest = time.Hour
	}
	return time.Duration(n) * longest
}

package ratelimit

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// DefaultBanMax is a zone's longest ban when `ban_max` is not set.
const DefaultBanMax = 24 * time.Hour

// unmarshalBan reads `ban <duration> [after <n>]`.
func (z *Zone) unmarshalBan(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) != 1 && (len(args) != 3 || args[1] != "after") {
		return d.ArgErr()
	}
	dur, err := cfparse.PositiveDuration(d, "ban", args[0])
	if err != nil {
		return err
	}
	z.Ban = caddy.Duration(dur)
	if len(args) == 3 {
		// 0 would read as the default: refused here, as JSON cannot say it.
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil || n <= 0 {
			return d.Errf("invalid ban after '%s': must be a positive integer", args[2])
		}
		z.BanAfter = n
	}
	return nil
}

// checkBan checks ban, ban_after and ban_max.
func (z *Zone) checkBan() error {
	if z.Ban == 0 {
		switch {
		case z.BanAfter != 0:
			return onField("ban", errors.New("ban_after needs ban"))
		case z.BanMax != 0:
			return onField("ban_max", errors.New("ban_max needs ban"))
		case len(z.BanExempt) > 0:
			return onField("ban_exempt", errors.New("ban_exempt needs ban"))
		}
		return nil
	}
	if _, err := parseBanExempt(z.BanExempt); err != nil {
		return onField("ban_exempt", err)
	}
	switch {
	case z.Approximate > 0:
		return onField("ban", errors.New("ban does not work with approximate (its refusals are decided in process)"))
	case z.Algorithm == limiter.Concurrency:
		return onField("ban", errors.New("ban does not work with a concurrency zone (it has no window to count refusals in)"))
	case z.BanAfter < 0:
		return onField("ban", fmt.Errorf("invalid ban after '%d': must be a positive integer", z.BanAfter))
	case z.BanMax != 0 && z.BanMax < z.Ban:
		return onField("ban_max", fmt.Errorf("invalid ban_max %s: must be at least ban (%s)", time.Duration(z.BanMax), time.Duration(z.Ban)))
	}
	err := limiter.CheckBan(z.limiterBan())
	if z.BanMax != 0 && time.Duration(z.BanMax) > limiter.MaxBan {
		return onField("ban_max", err)
	}
	return onField("ban", err)
}

// limiterBan is the zone's ban with its defaults.
func (z *Zone) limiterBan() limiter.Ban {
	if z.Ban == 0 {
		return limiter.Ban{}
	}
	b := limiter.Ban{Duration: time.Duration(z.Ban), After: max(z.BanAfter, 1), Max: time.Duration(z.BanMax)}
	if b.Max == 0 {
		b.Max = max(DefaultBanMax, b.Duration)
	}
	return b
}

// storeBan is the ban the zone's asks carry: none in a dry_run zone,
// whose refusals never count.
func (z *Zone) storeBan() limiter.Ban {
	if z.DryRun {
		return limiter.Ban{}
	}
	return z.limiterBan()
}

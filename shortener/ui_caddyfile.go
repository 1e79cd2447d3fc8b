package shortener

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/internal/cfparse"
)

// unmarshalUI reads the ui subdirective:
//
//	ui <path> [{
//	    session_max_age <duration>
//	    session_idle    <duration>
//	}]
func (h *Handler) unmarshalUI(d *caddyfile.Dispenser, pos positions) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	h.UI = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if seen[name] {
			return d.Errf("duplicate ui setting '%s'", name)
		}
		seen[name] = true
		v, err := cfparse.OneArg(d)
		if err != nil {
			return err
		}
		dur, err := cfparse.PositiveDuration(d, name, v)
		if err != nil {
			return err
		}
		switch name {
		case "session_max_age":
			h.UISessionMaxAge = caddy.Duration(dur)
			pos["ui_session_max_age"] = cfparse.PosOf(d)
		case "session_idle":
			h.UISessionIdle = caddy.Duration(dur)
			pos["ui_session_idle"] = cfparse.PosOf(d)
		default:
			return d.Errf("unrecognized ui setting '%s' (want session_max_age or session_idle)", name)
		}
	}
	return nil
}

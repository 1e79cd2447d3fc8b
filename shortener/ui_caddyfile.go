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
func (r *reading) unmarshalUI(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	r.UI = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return uiBlock.Parse(d, r)
}

// uiBlock is the settings of `ui <path> { ... }`.
var uiBlock = cfparse.Block[reading]{
	Kind: "ui setting",
	Hint: " (want session_max_age or session_idle)",
	Subdirectives: cfparse.Table[reading]{
		"session_max_age": (*reading).unmarshalSessionMaxAge,
		"session_idle":    (*reading).unmarshalSessionIdle,
	},
}

// unmarshalSessionMaxAge reads `session_max_age <duration>`, recorded as
// ui_session_max_age.
func (r *reading) unmarshalSessionMaxAge(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	if err != nil {
		return err
	}
	r.UISessionMaxAge = caddy.Duration(dur)
	r.pos["ui_session_max_age"] = cfparse.PosOf(d)
	return nil
}

// unmarshalSessionIdle reads `session_idle <duration>`, recorded as
// ui_session_idle.
func (r *reading) unmarshalSessionIdle(d *caddyfile.Dispenser) error {
	dur, err := cfparse.PositiveDurationArg(d)
	if err != nil {
		return err
	}
	r.UISessionIdle = caddy.Duration(dur)
	r.pos["ui_session_idle"] = cfparse.PosOf(d)
	return nil
}

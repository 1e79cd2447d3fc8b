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
//	    secret          <value>
//	    secret_file     <path>
//	    previous_secret <value>
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
	Hint: " (want session_max_age, session_idle, secret, secret_file or previous_secret)",
	Subdirectives: cfparse.Table[reading]{
		"session_max_age": (*reading).unmarshalSessionMaxAge,
		"session_idle":    (*reading).unmarshalSessionIdle,
		"secret":          uiString("ui_secret", func(r *reading) *string { return &r.UISecret }),
		"secret_file":     uiString("ui_secret_file", func(r *reading) *string { return &r.UISecretFile }),
		"previous_secret": uiString("ui_previous_secret", func(r *reading) *string { return &r.UIPreviousSecret }),
	},
}

// uiString reads a subdirective of one value into the field at, recorded
// as field.
func uiString(field string, at func(*reading) *string) func(*reading, *caddyfile.Dispenser) error {
	return func(r *reading, d *caddyfile.Dispenser) error {
		v, err := cfparse.OneArg(d)
		if err != nil {
			return err
		}
		*at(r) = v
		r.pos[field] = cfparse.PosOf(d)
		return nil
	}
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

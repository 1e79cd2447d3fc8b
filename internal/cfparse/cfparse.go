// Package cfparse holds the small Caddyfile argument checks both modules'
// parsers share, so that their errors read the same way.
package cfparse

import (
	"fmt"
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

// NoArgs checks that the current subdirective has no argument.
func NoArgs(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Args reads the arguments of the current subdirective: at least one.
func Args(d *caddyfile.Dispenser) ([]string, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	return args, nil
}

// OnOff reads the one argument of the current subdirective, `on` or
// `off`; the error names the subdirective and the value.
func OnOff(d *caddyfile.Dispenser) (bool, error) {
	name := d.Val()
	v, err := OneArg(d)
	if err != nil {
		return false, err
	}
	if v != "on" && v != "off" {
		return false, d.Errf("invalid %s '%s': want on or off", name, v)
	}
	return v == "on", nil
}

// PositiveIntArg reads the one argument of the current subdirective as an
// integer > 0; the error names the subdirective and the value.
func PositiveIntArg(d *caddyfile.Dispenser) (int, error) {
	name := d.Val()
	v, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	return PositiveInt(d, name, v)
}

// PositiveDurationArg reads the one argument of the current subdirective
// as a Caddy duration > 0; the error names the subdirective and the value.
func PositiveDurationArg(d *caddyfile.Dispenser) (time.Duration, error) {
	name := d.Val()
	v, err := OneArg(d)
	if err != nil {
		return 0, err
	}
	return PositiveDuration(d, name, v)
}

// Int parses v as an integer; the error names what and v.
func Int(d *caddyfile.Dispenser, what, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, d.Errf("invalid %s '%s': must be an integer", what, v)
	}
	return n, nil
}

// Int64 parses v as a 64-bit integer; the error names what and v.
func Int64(d *caddyfile.Dispenser, what, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, d.Errf("invalid %s '%s': must be an integer", what, v)
	}
	return n, nil
}

// Duration parses v as a Caddy duration (such as `1m30s` or `2d`); the
// error names what and v.
func Duration(d *caddyfile.Dispenser, what, v string) (time.Duration, error) {
	dur, err := caddy.ParseDuration(v)
	if err != nil {
		return 0, d.Errf("invalid %s '%s': %v", what, v, err)
	}
	return dur, nil
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

// At adds the Caddyfile file and line of d's current token to err (nil
// stays nil), as d.Errf does for its own errors.
func At(d *caddyfile.Dispenser, err error) error {
	if err == nil {
		return nil
	}
	return d.WrapErr(err)
}

// Pos is where something was read in a Caddyfile, kept so that a later
// check can name the line. The zero Pos is unknown (the config was JSON).
type Pos struct {
	File string
	Line int
}

// PosOf is the position of d's current token.
func PosOf(d *caddyfile.Dispenser) Pos { return Pos{File: d.File(), Line: d.Line()} }

// Wrap adds the position to err, in the form Caddy's Dispenser uses
// (`<err>, at <file>:<line>`); an unknown position or a nil err leaves err
// as it is.
func (p Pos) Wrap(err error) error {
	if err == nil || p.File == "" && p.Line == 0 {
		return err
	}
	return fmt.Errorf("%w, at %s:%d", err, p.File, p.Line)
}

// Positions records where a block and each of its subdirectives were read,
// so that a validation run after parsing can name the line of the value it
// judges. A nil *Positions knows nothing (the config was JSON).
type Positions struct {
	Block  Pos            // the directive opening the block
	End    Pos            // the block's closing brace
	Fields map[string]Pos // each subdirective, by name
}

// NewPositions starts recording at d's current token, the block's
// directive, which is also recorded as a field of its own name.
func NewPositions(d *caddyfile.Dispenser) *Positions {
	p := &Positions{Block: PosOf(d), Fields: map[string]Pos{}}
	p.Field(d)
	return p
}

// Field records that the subdirective at d's current token was read here.
func (p *Positions) Field(d *caddyfile.Dispenser) { p.Fields[d.Val()] = PosOf(d) }

// Ended records d's current token as the block's end.
func (p *Positions) Ended(d *caddyfile.Dispenser) { p.End = PosOf(d) }

// Of is where field was read; for a field the block does not set, the
// block's end (a rule on what the block as a whole left out or made).
func (p *Positions) Of(field string) Pos {
	if p == nil {
		return Pos{}
	}
	if pos, ok := p.Fields[field]; ok {
		return pos
	}
	return p.End
}

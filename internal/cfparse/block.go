package cfparse

import (
	"slices"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Table maps the name of each subdirective of a block to the function that
// reads it into a T. The function is called at the name's token and reads
// the rest of its line (and its own block, if any). Its receiver comes
// first, so a method expression such as (*Zone).unmarshalBan fits.
type Table[T any] map[string]func(v *T, d *caddyfile.Dispenser) error

// Block is how one Caddyfile block of subdirectives is read: each name
// through its entry in Subdirectives, once unless it is Repeatable. Its
// errors read
//
//	<Prefix>unrecognized <Kind> '<name>'<Hint>
//	<Prefix>duplicate <Kind> '<name>'
type Block[T any] struct {
	Subdirectives Table[T]
	Repeatable    []string // the names that may appear more than once

	// Each, if set, is called at each name's token before it is read
	// (to record where it was read, say).
	Each func(v *T, d *caddyfile.Dispenser)

	Prefix func(v *T) string // before each error, such as "zone 'api': "; none if nil
	Kind   string            // what the errors call a subdirective; "subdirective" if empty
	Hint   string            // after an unrecognized name, such as " (want a or b)"
}

// Parse reads the block that opens at d's current line, if any, into v
// and stops at its closing brace. The first error ends the reading.
func (b Block[T]) Parse(d *caddyfile.Dispenser, v *T) error {
	seen := map[string]bool{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		read, ok := b.Subdirectives[name]
		if !ok {
			return d.Errf("%sunrecognized %s '%s'%s", b.prefix(v), b.kind(), name, b.Hint)
		}
		if seen[name] && !slices.Contains(b.Repeatable, name) {
			return d.Errf("%sduplicate %s '%s'", b.prefix(v), b.kind(), name)
		}
		seen[name] = true
		if b.Each != nil {
			b.Each(v, d)
		}
		if err := read(v, d); err != nil {
			return err
		}
	}
	return nil
}

func (b Block[T]) prefix(v *T) string {
	if b.Prefix == nil {
		return ""
	}
	return b.Prefix(v)
}

func (b Block[T]) kind() string {
	if b.Kind == "" {
		return "subdirective"
	}
	return b.Kind
}

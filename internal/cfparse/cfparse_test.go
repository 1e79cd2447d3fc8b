package cfparse

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestOneArg(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"x a", "a", ""},
		{"x", "", "wrong argument count"},
		{"x a b", "", "wrong argument count"},
	} {
		d := caddyfile.NewTestDispenser(tt.in)
		d.Next()
		got, err := OneArg(d)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("OneArg(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("OneArg(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPositive(t *testing.T) {
	d := caddyfile.NewTestDispenser("x")
	if n, err := PositiveInt(d, "size", "12"); n != 12 || err != nil {
		t.Errorf("PositiveInt(12) = %d, %v", n, err)
	}
	for _, v := range []string{"0", "-1", "many", ""} {
		if _, err := PositiveInt(d, "size", v); err == nil || !strings.Contains(err.Error(), "invalid size '"+v+"': must be a positive integer") {
			t.Errorf("PositiveInt(%q) error = %v", v, err)
		}
	}
	if dur, err := PositiveDuration(d, "ttl", "1m"); dur != time.Minute || err != nil {
		t.Errorf("PositiveDuration(1m) = %v, %v", dur, err)
	}
	for _, v := range []string{"0s", "-1s", "soon"} {
		if _, err := PositiveDuration(d, "ttl", v); err == nil || !strings.Contains(err.Error(), "invalid ttl '"+v+"': must be a positive duration") {
			t.Errorf("PositiveDuration(%q) error = %v", v, err)
		}
	}
}

func TestNumbers(t *testing.T) {
	d := caddyfile.NewTestDispenser("x")
	d.Next()
	if n, err := Int(d, "status", "-3"); n != -3 || err != nil {
		t.Errorf("Int(-3) = %d, %v", n, err)
	}
	if n, err := Int64(d, "events", "1125899906842624"); n != 1<<50 || err != nil {
		t.Errorf("Int64(2^50) = %d, %v", n, err)
	}
	if dur, err := Duration(d, "window", "0s"); dur != 0 || err != nil {
		t.Errorf("Duration(0s) = %v, %v", dur, err)
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := Int(d, "status", "teapot"); return err }(), "invalid status 'teapot': must be an integer"},
		{func() error { _, err := Int64(d, "events", "1e3"); return err }(), "invalid events '1e3': must be an integer"},
		{func() error { _, err := Duration(d, "window", "soon"); return err }(), "invalid window 'soon': "},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) || !strings.Contains(tt.err.Error(), "Testfile:") {
			t.Errorf("error = %v, want %q at the file and line", tt.err, tt.want)
		}
	}
}

func TestPositions(t *testing.T) {
	d := caddyfile.NewTestDispenser("a\nb")
	d.Next()
	d.Next()
	base := errors.New("bad")
	if err := At(d, base); !errors.Is(err, base) || err.Error() != "bad, at Testfile:2" {
		t.Errorf("At = %v, want bad, at Testfile:2 wrapping the error", err)
	}
	if err := At(d, nil); err != nil {
		t.Errorf("At(nil) = %v", err)
	}
	p := PosOf(d)
	if err := p.Wrap(base); !errors.Is(err, base) || err.Error() != "bad, at Testfile:2" {
		t.Errorf("Pos.Wrap = %v, want bad, at Testfile:2 wrapping the error", err)
	}
	if err := (Pos{}).Wrap(base); err != base {
		t.Errorf("Pos{}.Wrap = %v, want the error itself", err)
	}
}

func TestPositionsOf(t *testing.T) {
	d := caddyfile.NewTestDispenser("block {\n\ta 1\n\tb 2\n}")
	d.Next()
	p := NewPositions(d)
	for d.NextBlock(0) {
		p.Field(d)
		d.RemainingArgs()
	}
	p.Ended(d)
	for _, tt := range []struct {
		field string
		line  int
	}{{"a", 2}, {"b", 3}, {"c", 4}} {
		if got := p.Of(tt.field); got.Line != tt.line || got.File != "Testfile" {
			t.Errorf("Of(%q) = %+v, want Testfile:%d", tt.field, got, tt.line)
		}
	}
	if got := (*Positions)(nil).Of("a"); got != (Pos{}) {
		t.Errorf("nil Of = %+v, want unknown", got)
	}
}

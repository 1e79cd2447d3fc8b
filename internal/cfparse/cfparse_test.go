package cfparse

import (
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

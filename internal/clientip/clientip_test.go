package clientip

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		name, caddyVar, remote string
		set                    bool
		want                   netip.Addr
	}{
		{name: "caddy's client ip wins", set: true, caddyVar: "203.0.113.9", remote: "10.0.0.1:1234", want: netip.MustParseAddr("203.0.113.9")},
		{name: "mapped ipv4 unmapped", set: true, caddyVar: "::ffff:198.51.100.7", remote: "10.0.0.1:1", want: netip.MustParseAddr("198.51.100.7")},
		{name: "zone dropped", set: true, caddyVar: "fe80::1%eth0", want: netip.MustParseAddr("fe80::1")},
		{name: "not an address from caddy", set: true, caddyVar: "not-an-ip", remote: "10.0.0.1:1"},
		{name: "no caddy server: the connection", remote: "[2001:db8::5]:443", want: netip.MustParseAddr("2001:db8::5")},
		{name: "no caddy server: a bare address", remote: "192.0.2.1", want: netip.MustParseAddr("192.0.2.1")},
		{name: "nothing parses", remote: "pipe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			if tc.set {
				ctx := context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: tc.caddyVar})
				r = r.WithContext(ctx)
			}
			if got := Addr(r); got != tc.want {
				t.Errorf("Addr(var %q, remote %q) = %v, want %v", tc.caddyVar, tc.remote, got, tc.want)
			}
		})
	}
}

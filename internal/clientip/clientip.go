// Package clientip reads a request's client address the way both modules
// key and judge it: Caddy's client IP, so the server's `trusted_proxies`
// applies.
package clientip

import (
	"net/http"
	"net/netip"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// Addr is the client's address as Caddy determined it (the client_ip
// variable: the connection's address, or the forwarded one from a
// trusted proxy), else the connection's address (a request served outside
// Caddy's server, as in tests); IPv4-mapped IPv6 unmapped, any zone
// dropped; the zero Addr if neither parses.
func Addr(r *http.Request) netip.Addr {
	if s, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && s != "" {
		if a, err := netip.ParseAddr(s); err == nil {
			return a.Unmap().WithZone("")
		}
		return netip.Addr{}
	}
	if r.RemoteAddr == "" { // a failed parse allocates its error: skip the obvious case
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	if a, err := netip.ParseAddr(r.RemoteAddr); err == nil {
		return a.Unmap().WithZone("")
	}
	return netip.Addr{}
}

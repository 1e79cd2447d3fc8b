package ratelimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
)

// ClientNetwork is how much of the client's address names its network in
// the placeholder `{http.ratelimit.client_network}`: the client IP Caddy
// determined (so the server's `trusted_proxies` applies) with all but its
// first bits zeroed, written as a network such as `203.0.113.7/32` or
// `2001:db8:1:2::/64`. An IPv4-mapped IPv6 address counts as IPv4.
type ClientNetwork struct {
	// The prefix length kept of an IPv4 address, 0-32. Default: `32`.
	IPv4Bits int `json:"ipv4_bits"`
	// The prefix length kept of an IPv6 address, 0-128. Default: `64`
	// (one subscriber's LAN: with `{client_ip}` it holds 2^64 keys).
	IPv6Bits int `json:"ipv6_bits"`
}

// Default prefix lengths of the client network.
const (
	DefaultClientNetworkIPv4 = 32
	DefaultClientNetworkIPv6 = 64
)

// placeholderClientNetwork is the name of the client network placeholder.
const placeholderClientNetwork = "http.ratelimit.client_network"

// check checks the prefix lengths.
func (c *ClientNetwork) check() error {
	switch {
	case c.IPv4Bits < 0 || c.IPv4Bits > 32:
		return fmt.Errorf("invalid client_network ipv4 bits %d: must be 0-32", c.IPv4Bits)
	case c.IPv6Bits < 0 || c.IPv6Bits > 128:
		return fmt.Errorf("invalid client_network ipv6 bits %d: must be 0-128", c.IPv6Bits)
	}
	return nil
}

// usesClientNetwork reports whether a template of the handler (a key, a
// cost, the hash tag, a plan key or a dynamic quota) reads the client
// network: only then is it worked out per request (3 allocations).
func (h *Handler) usesClientNetwork() bool {
	for _, t := range h.templates() {
		if strings.Contains(t, "{"+placeholderClientNetwork+"}") {
			return true
		}
	}
	return false
}

// clientNetwork returns the configured lengths, or the defaults.
func (h *Handler) clientNetwork() ClientNetwork {
	if h.ClientNetwork == nil {
		return ClientNetwork{IPv4Bits: DefaultClientNetworkIPv4, IPv6Bits: DefaultClientNetworkIPv6}
	}
	return *h.ClientNetwork
}

// mask is the network of addr for these lengths; false when addr is not
// an IP address.
func (c ClientNetwork) mask(addr string) (netip.Prefix, bool) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return netip.Prefix{}, false
	}
	return c.maskIP(ip.Unmap().WithZone(""))
}

// maskIP is the network of ip (unmapped, without zone) for these lengths;
// false when ip is the zero Addr.
func (c ClientNetwork) maskIP(ip netip.Addr) (netip.Prefix, bool) {
	if !ip.IsValid() {
		return netip.Prefix{}, false
	}
	bits := c.IPv6Bits
	if ip.Is4() {
		bits = c.IPv4Bits
	}
	p, err := ip.Prefix(bits)
	return p, err == nil
}

// setClientNetwork sets `{http.ratelimit.client_network}` for r (when a
// template of the handler reads it: see usesClientNetwork): the
// network of Caddy's client IP, or of the connection's address when no
// Caddy server set one (tests). An address that is not an IP (never from
// Caddy's server) gives the empty string, one shared key.
func (h *Handler) setClientNetwork(r *http.Request, repl *caddy.Replacer) {
	if !h.setsNetwork {
		return
	}
	repl.Set(placeholderClientNetwork, h.clientNetworkOf(r))
}

// clientNetworkOf is the value of `{http.ratelimit.client_network}` for r.
func (h *Handler) clientNetworkOf(r *http.Request) string {
	if p, ok := h.network.maskIP(clientip.Addr(r)); ok {
		return p.String()
	}
	return ""
}

package urlpolicy

import (
	"net/netip"
	"strings"
)

// privateHost reports a host that deny_private refuses: a literal address
// in one of privatePrefixes (an IPv6 address embedding an IPv4 one is
// judged by that IPv4 address too), or the name localhost or a name under
// .localhost, which browsers and resolvers send to the loopback (RFC 6761).
// No name is resolved: a public name that resolves to a private address
// passes; that is the resolver's and the network's business.
func privateHost(h Host) bool {
	if h.kind == hostDomain {
		name := strings.TrimSuffix(h.ASCII, ".")
		return name == "localhost" || strings.HasSuffix(name, ".localhost")
	}
	return privateAddr(h.addr)
}

// privatePrefixes are the ranges deny_private refuses.
var privatePrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"; 0.0.0.0 reaches the loopback on Linux and macOS
	netip.MustParsePrefix("10.0.0.0/8"),     // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (CGNAT, RFC 6598); cloud metadata lives here too
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("169.254.0.0/16"), // link-local, incl. 169.254.169.254 (cloud metadata)
	netip.MustParsePrefix("172.16.0.0/12"),  // RFC 1918
	netip.MustParsePrefix("192.168.0.0/16"), // RFC 1918
	netip.MustParsePrefix("::/128"),         // unspecified
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("fc00::/7"),       // unique-local
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated, still routed by old networks)
}

// embeddingPrefixes are IPv6 ranges whose low 32 bits are an IPv4 address
// the packet reaches: IPv4-mapped, IPv4-compatible (deprecated) and the
// NAT64 well-known prefix.
var embeddingPrefixes = []netip.Prefix{
	netip.MustParsePrefix("::ffff:0:0/96"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// PrivateAddr reports an address deny_private refuses: one in the
// private, loopback, link-local, unspecified, shared (CGNAT) or
// unique-local ranges, or an IPv6 address embedding such an IPv4 address
// (IPv4-mapped, IPv4-compatible, NAT64). Webhook deliveries judge the
// address they dial with it.
func PrivateAddr(a netip.Addr) bool { return privateAddr(a) }

func privateAddr(a netip.Addr) bool {
	for _, p := range privatePrefixes {
		if p.Contains(a) {
			return true
		}
	}
	if a.Is6() {
		for _, p := range embeddingPrefixes {
			if p.Contains(a) {
				b := a.As16()
				return privateAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
			}
		}
	}
	return false
}

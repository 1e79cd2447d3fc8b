package targeting

import (
	"net/netip"
	"strings"
)

// ipValue accepts an IPv4 or IPv6 address or CIDR prefix without a zone,
// shown as its masked prefix ("198.51.100.7" is "198.51.100.7/32"). An
// IPv4-mapped IPv6 address or prefix of /96 or longer is shown as IPv4,
// as visitors' mapped addresses are compared.
func ipValue(s string) (string, string) {
	const bad = "must be an IP address or CIDR prefix (203.0.113.0/24, 2001:db8::/32)"
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return "", bad
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return "", bad
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return "", "an IPv4-mapped prefix must be /96 or longer"
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked().String(), ""
}

// visitorAddr is the address compared with ip conditions: IPv4-mapped
// IPv6 as IPv4, without a zone.
func visitorAddr(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// inPrefixes reports whether a (a visitorAddr) is in one of ps.
func inPrefixes(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

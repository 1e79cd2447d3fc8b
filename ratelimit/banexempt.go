package ratelimit

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/edgekit/caddy-edgekit/internal/clientip"
)

// banExempt is a zone's `ban_exempt`, prepared: networks matched against
// Caddy's client IP, keys against the zone's expanded key.
type banExempt struct {
	nets []netip.Prefix
	keys map[string]bool
}

// parseBanExempt splits values into networks (a CIDR, or one IP address)
// and keys (anything else); a value with a '/' that is not a CIDR is an
// error, so that a mistyped network never silently becomes a key.
func parseBanExempt(values []string) (banExempt, error) {
	var b banExempt
	for _, v := range values {
		if p, ok, err := exemptNetwork(v); err != nil {
			return b, err
		} else if ok {
			b.nets = append(b.nets, p)
			continue
		}
		if b.keys == nil {
			b.keys = map[string]bool{}
		}
		b.keys[v] = true
	}
	return b, nil
}

// exemptNetwork parses v as a network: a CIDR (masked) or an address
// (a network of one). ok is false for a value that is neither, an error
// for a value with a '/' that is not a CIDR.
func exemptNetwork(v string) (netip.Prefix, bool, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return p, false, fmt.Errorf("invalid ban_exempt network '%s': %v", v, err)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 { // as client IPs are: unmapped
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), true, nil
	}
	ip, err := netip.ParseAddr(v)
	if err != nil {
		return netip.Prefix{}, false, nil
	}
	ip = ip.Unmap().WithZone("")
	return netip.PrefixFrom(ip, ip.BitLen()), true, nil
}

// exempt reports whether the request (its client IP: clientip.Addr) or the
// expanded key is never banned.
func (b *banExempt) exempt(r *http.Request, key string) bool {
	if b.keys[key] {
		return true
	}
	if len(b.nets) == 0 {
		return false
	}
	ip := clientip.Addr(r)
	if !ip.IsValid() {
		return false
	}
	for _, p := range b.nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

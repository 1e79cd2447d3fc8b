package ratelimit

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzBanExempt: a ban_exempt value is a network or a key, never both and
// never lost: a value with '/' is a CIDR or refused; a network exempts a
// client address exactly when package net's parse of it contains the
// address; a key exempts exactly that key.
func FuzzBanExempt(f *testing.F) {
	for _, s := range [][2]string{
		{"100.64.0.0/10", "100.127.255.255"}, {"100.64.0.0/10", "100.128.0.0"},
		{"2001:db8::/32", "2001:db8:ffff::1"}, {"::ffff:10.0.0.0/104", "10.9.9.9"},
		{"192.0.2.1", "::ffff:192.0.2.1"}, {"fe80::1%eth0", "fe80::1"}, {"partner", "10.0.0.1"},
		{"10.0.0/8", "10.0.0.1"}, {"0.0.0.0/0", "::1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, v, addr string) {
		b, err := parseBanExempt([]string{v})
		if err != nil {
			if !strings.Contains(v, "/") {
				t.Fatalf("%q refused without a '/': %v", v, err)
			}
			return
		}
		if len(b.nets)+len(b.keys) != 1 {
			t.Fatalf("%q: %d networks and %d keys, want one of them", v, len(b.nets), len(b.keys))
		}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = net.JoinHostPort(addr, "1")
		if len(b.keys) == 1 {
			if !b.exempt(r, v) || (addr != v && b.exempt(r, addr)) {
				t.Fatalf("key %q: exempt(%q) wrong", v, addr)
			}
			return
		}
		got := b.exempt(r, "\x00not a key")
		// A zone (IPv6 only, not empty) is ignored, as for client_network.
		host, zone, zoned := strings.Cut(addr, "%")
		ip := net.ParseIP(host)
		if ip == nil || zoned && (zone == "" || !strings.Contains(host, ":")) {
			if got {
				t.Fatalf("network %q exempts %q, which is no address", v, addr)
			}
			return
		}
		var want bool
		if _, n, err := net.ParseCIDR(v); err == nil {
			ones, _ := n.Mask.Size()
			if strings.Contains(v, ".") && strings.Contains(v, ":") && ones < 96 {
				return // an IPv4-mapped network shorter than ::ffff:0:0/96: package net widens it to all IPv4
			}
			want = n.Contains(ip)
		} else {
			host, _, _ := strings.Cut(v, "%")
			want = net.ParseIP(host).Equal(ip)
		}
		if got != want {
			t.Fatalf("network %q, client %q: exempt %v, package net says %v", v, addr, got, want)
		}
	})
}

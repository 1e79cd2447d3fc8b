package urlpolicy

import (
	"net/netip"
	"testing"
)

func TestPrivateAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.255.0.9", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.32.0.1", false},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"::", true},
		{"::1", true},
		{"fe80::1", true},
		{"fd00::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"::ffff:93.184.216.34", false},
		{"93.184.216.34", false},
		{"8.8.8.8", false},
		{"2606:4700:4700::1111", false},
	} {
		if got := PrivateAddr(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("PrivateAddr(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

package ratelimit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

func TestClientNetworkMask(t *testing.T) {
	def := ClientNetwork{IPv4Bits: DefaultClientNetworkIPv4, IPv6Bits: DefaultClientNetworkIPv6}
	tests := []struct {
		cn   ClientNetwork
		addr string
		want string // "" when not an address
	}{
		{def, "203.0.113.7", "203.0.113.7/32"},
		{def, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"},
		{def, "::ffff:203.0.113.7", "203.0.113.7/32"}, // IPv4-mapped counts as IPv4
		{def, "fe80::1%eth0", "fe80::/64"},
		{ClientNetwork{IPv4Bits: 24, IPv6Bits: 48}, "203.0.113.7", "203.0.113.0/24"},
		{ClientNetwork{IPv4Bits: 24, IPv6Bits: 48}, "2001:db8:1:2::9", "2001:db8:1::/48"},
		{ClientNetwork{IPv4Bits: 0, IPv6Bits: 0}, "203.0.113.7", "0.0.0.0/0"},
		{ClientNetwork{IPv4Bits: 0, IPv6Bits: 0}, "2001:db8::1", "::/0"},
		{ClientNetwork{IPv4Bits: 32, IPv6Bits: 128}, "2001:db8::1", "2001:db8::1/128"},
		{def, "not an ip", ""},
		{def, "", ""},
		{def, "203.0.113.7:80", ""},
	}
	for _, tt := range tests {
		p, ok := tt.cn.mask(tt.addr)
		got := ""
		if ok {
			got = p.String()
		}
		if got != tt.want {
			t.Errorf("%+v.mask(%q) = %q, want %q", tt.cn, tt.addr, got, tt.want)
		}
	}
}

// TestClientNetworkPlaceholder: the handler sets the placeholder from
// Caddy's client IP, and a zone keyed by it counts a whole /64 as one key.
func TestClientNetworkPlaceholder(t *testing.T) {
	z := zone("per_net", 3, time.Minute)
	z.Key = "{http.ratelimit.client_network}"
	h := &Handler{Zones: []*Zone{z}}
	provision(t, h)
	next := new(statusHandler)
	statuses := make([]int, 0, 4)
	for i := range 4 {
		req := get("/")
		req.RemoteAddr = fmt.Sprintf("[2001:db8:1:2::%x]:4242", i+1)
		res := do(h, next, req)
		statuses = append(statuses, res.status)
		if v, _ := res.repl.Get(placeholderClientNetwork); v != "2001:db8:1:2::/64" {
			t.Errorf("request %d: %s = %v, want 2001:db8:1:2::/64", i, placeholderClientNetwork, v)
		}
	}
	if fmt.Sprint(statuses) != "[200 200 200 429]" {
		t.Errorf("statuses from 4 addresses of one /64 = %v, want [200 200 200 429]", statuses)
	}
	req := get("/")
	req.RemoteAddr = "[2001:db8:1:3::1]:4242"
	if res := do(h, next, req); res.status != http.StatusOK {
		t.Errorf("another /64: status %d, want 200", res.status)
	}

	// A handler whose templates do not read it spends nothing on it.
	other := &Handler{Zones: []*Zone{zone("per_ip", 3, time.Minute)}}
	other.Zones[0].Key = "{client_ip}"
	provision(t, other)
	if v, ok := do(other, next, get("/")).repl.Get(placeholderClientNetwork); ok {
		t.Errorf("handler keyed by {client_ip} set %s = %v", placeholderClientNetwork, v)
	}
}

// TestClientNetworkE2E is the acceptance test of issue 16 §4: 1,000
// requests from 1,000 addresses of one IPv6 /64, sent through a trusted
// proxy on loopback (X-Forwarded-For names the client), share one quota
// on Redis.
func TestClientNetworkE2E(t *testing.T) {
	_, prefix := testenv.Redis(t)
	// The 1,000 requests must share one fixed window of a minute (its
	// count read back in each answer): about a second, longer under -race.
	testenv.AwayFromWindowEnd(t, time.Minute, 15*time.Second)
	tester, port := startCaddy(t, "\tservers {\n\t\ttrusted_proxies static 127.0.0.0/8 ::1/128\n\t}\n", fmt.Sprintf(`
http://localhost:$PORT {
	ratelimit {
		zone per_client {
			key {http.ratelimit.client_network}
			events 1000
			window 1m
			algorithm fixed_window
		}
		redis {
			url %s
			key_prefix %s
		}
		timeout 2s
	}
	respond "{http.ratelimit.client_network}"
}
`, testenv.RedisURL(t), prefix))
	send := func(client string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = fmt.Sprintf("localhost:%d", port)
		req.Header.Set("X-Forwarded-For", client)
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatalf("GET from %s: %v", client, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("RateLimit"), string(body)
	}
	for i := range 1000 {
		client := fmt.Sprintf("2001:db8:aa:bb:%x:%x:%x:%x", i*7919%65536, i, i*31%65536, 65535-i)
		status, rl, body := send(client)
		if status != http.StatusOK || body != "2001:db8:aa:bb::/64" {
			t.Fatalf("request %d from %s: %d %q, want 200 2001:db8:aa:bb::/64", i, client, status, body)
		}
		if want := fmt.Sprintf(`"per_client";r=%d;`, 999-i); !strings.HasPrefix(rl, want) {
			t.Fatalf("request %d from %s: RateLimit %q, want prefix %q (one shared quota)", i, client, rl, want)
		}
	}
	if status, _, _ := send("2001:db8:aa:bb:ffff::1"); status != http.StatusTooManyRequests {
		t.Errorf("1,001st address of the /64: status %d, want 429", status)
	}
	if status, _, body := send("2001:db8:aa:bc::1"); status != http.StatusOK || body != "2001:db8:aa:bc::/64" {
		t.Errorf("another /64: %d %q, want 200 2001:db8:aa:bc::/64", status, body)
	}
	if status, _, body := send("::ffff:198.51.100.9"); status != http.StatusOK || body != "198.51.100.9/32" {
		t.Errorf("IPv4-mapped client: %d %q, want 200 198.51.100.9/32", status, body)
	}
}

// FuzzClientNetwork: for any string that is an IP address, the network
// the handler writes contains it, has the configured length (IPv4-mapped
// addresses as IPv4), and equals what package net's own masking gives; any
// other string gives no network.
func FuzzClientNetwork(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "2001:db8:1:2::1", "::ffff:1.2.3.4", "fe80::1%eth0", "::", "0.0.0.0", "1.2.3", "x"} {
		f.Add(s, uint8(32), uint8(64))
	}
	f.Fuzz(func(t *testing.T, addr string, b4, b6 uint8) {
		cn := ClientNetwork{IPv4Bits: int(b4 % 33), IPv6Bits: int(b6 % 129)}
		p, ok := cn.mask(addr)
		ip, err := netip.ParseAddr(addr)
		if ok != (err == nil) {
			t.Fatalf("mask(%q) ok = %v, ParseAddr error %v", addr, ok, err)
		}
		if !ok {
			return
		}
		ip = ip.Unmap().WithZone("")
		want := cn.IPv6Bits
		if ip.Is4() {
			want = cn.IPv4Bits
		}
		if p.Bits() != want || !p.Contains(ip) || p != p.Masked() {
			t.Fatalf("mask(%q) = %s: want a masked /%d containing %s", addr, p, want, ip)
		}
		// Oracle: package net masks the same address the same way.
		nip := net.IP(ip.AsSlice())
		bitsTotal := 128
		if ip.Is4() {
			bitsTotal = 32
		}
		n := net.IPNet{IP: nip.Mask(net.CIDRMask(want, bitsTotal)), Mask: net.CIDRMask(want, bitsTotal)}
		if n.String() != p.String() || !n.Contains(nip) {
			t.Fatalf("mask(%q) = %s, package net gives %s", addr, p, n.String())
		}
		if _, err := netip.ParsePrefix(p.String()); err != nil {
			t.Fatalf("mask(%q) = %q does not parse back: %v", addr, p, err)
		}
	})
}

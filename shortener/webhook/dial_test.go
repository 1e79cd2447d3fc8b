package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// answer is a resolver that always answers addrs.
func answer(addrs ...string) func(context.Context, string, string) ([]netip.Addr, error) {
	return func(context.Context, string, string) ([]netip.Addr, error) {
		out := make([]netip.Addr, len(addrs))
		for i, a := range addrs {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

// TestRebindingRefused: the name answers a public address when the
// endpoint is checked and the loopback when the delivery connects; the
// delivery is refused and the receiver never reached.
func TestRebindingRefused(t *testing.T) {
	var hits atomic.Int32
	srv := receiver(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	var lookups atomic.Int32
	c := &Client{LookupNetIP: func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return answer("203.0.113.7")(ctx, network, host)
		}
		return answer("127.0.0.1")(ctx, network, host)
	}}
	url := strings.Replace(srv.URL, "127.0.0.1", "rebind.example", 1)
	if err := c.CheckTarget(context.Background(), url); err != nil {
		t.Fatalf("CheckTarget() with a public answer = %v", err)
	}
	hdr, body := signedMessage(t, NewSecret())
	a := c.Send(context.Background(), url, hdr, body)
	if !errors.Is(a.Err, ErrForbiddenAddress) || hits.Load() != 0 || lookups.Load() != 2 {
		t.Errorf("Send() after rebinding = %+v, %d requests, %d lookups; want ErrForbiddenAddress and none", a, hits.Load(), lookups.Load())
	}
}

func TestAllowedAddrs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		allow   []netip.Prefix
		want    string // the addresses kept, or "" when refused
	}{
		{"public", []string{"203.0.113.7", "2001:db8::1"}, nil, "[203.0.113.7 2001:db8::1]"},
		{"private dropped from a mixed answer", []string{"10.0.0.1", "203.0.113.7"}, nil, "[203.0.113.7]"},
		{"all private", []string{"10.0.0.1", "::1"}, nil, ""},
		{"metadata", []string{"169.254.169.254"}, nil, ""},
		{"mapped loopback", []string{"::ffff:127.0.0.1"}, nil, ""},
		{"NAT64 of private", []string{"64:ff9b::a00:1"}, nil, ""},
		{"multicast", []string{"224.0.0.1", "ff02::1"}, nil, ""},
		{"broadcast", []string{"255.255.255.255"}, nil, ""},
		{"unspecified", []string{"0.0.0.0", "::"}, nil, ""},
		{"allowed private", []string{"10.1.2.3"}, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "[10.1.2.3]"},
		{"allowed loopback, mapped", []string{"::ffff:127.0.0.1"}, loopback, "[127.0.0.1]"},
		{"allow-list is exact", []string{"10.1.2.3"}, []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{Allow: tc.allow, LookupNetIP: answer(tc.answers...)}
			got, err := c.allowedAddrs(context.Background(), "target.example")
			switch {
			case tc.want == "" && !errors.Is(err, ErrForbiddenAddress):
				t.Errorf("allowedAddrs(%v) = %v, %v; want ErrForbiddenAddress", tc.answers, got, err)
			case tc.want != "" && (err != nil || fmtAddrs(got) != tc.want):
				t.Errorf("allowedAddrs(%v) = %v, %v; want %s", tc.answers, got, err, tc.want)
			}
		})
	}
}

func fmtAddrs(a []netip.Addr) string {
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = x.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestControlJudgesTheDialedAddress: the last check, on the socket
// address about to be connected, whatever resolved it.
func TestControlJudgesTheDialedAddress(t *testing.T) {
	c := &Client{}
	for addr, ok := range map[string]bool{"127.0.0.1:80": false, "[::1]:443": false, "169.254.169.254:80": false, "203.0.113.7:443": true} {
		if err := c.control("tcp", addr, nil); (err == nil) != ok || !ok && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%s) = %v, want allowed %v", addr, err, ok)
		}
	}
	if err := (&Client{Allow: loopback}).control("tcp4", "127.0.0.1:80", nil); err != nil {
		t.Errorf("control(127.0.0.1) with the loopback allowed = %v", err)
	}
}

func TestCheckTarget(t *testing.T) {
	c := &Client{LookupNetIP: answer("203.0.113.7")}
	for url, ok := range map[string]bool{
		"https://hooks.example/x":  true,
		"http://203.0.113.8:8080/": true,
		"https://127.0.0.1/":       false,
		"https://[fd00::1]/":       false,
		"ftp://hooks.example/":     false,
		"https:///nohost":          false,
		"hooks.example/x":          false,
	} {
		if err := c.CheckTarget(context.Background(), url); (err == nil) != ok {
			t.Errorf("CheckTarget(%q) = %v, want allowed %v", url, err, ok)
		}
	}
}

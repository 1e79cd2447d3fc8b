package urlpolicy

import (
	"strings"
	"testing"
)

// FuzzLongURLHost checks the long-URL policy against Node's WHATWG URL
// parser (one node process per fuzz worker). Whenever a URL is accepted:
// its stored form is ASCII; its host equals the hostname Node reads from
// the input and from the stored form; no deny_hosts entry matches Node's
// hostname; and with deny_private on, Node's hostname is no loopback,
// private, link-local, shared or unspecified address and no localhost
// name. An input without "://" is tried as an http URL's authority and
// path, so the fuzzer spends its time on hosts.
func FuzzLongURLHost(f *testing.F) {
	for _, seed := range []string{
		"https://ｅｖｉｌ.com", "https://evil。com", "https://ev\u00adil.com", "https://%EF%BD%85vil.com",
		"https://ｓｈｏ.ｒｔ/abc", "http://2130706433/", "http://0x7f.1/", "http://127.1/",
		"http://[::ffff:127.0.0.1]/", "https://evil\u202e.com", "bücher.example", "xn--bcher-kva.example",
		"ＥＶＩＬ.ｃｏｍ.", "0x7F.0.0.01", "[::ffff:7f00:1]:80", "[64:ff9b::a00:1]", "169.254.169.254",
		"[fe80::1]", "0", "a.phish.test", "foo.localhost.", "%31%32%37.1", "xn--zz-", "①.com", "a.מ1",
		"ws://example.com:443/x", "myapp://example.com/", "ftp://[::]:21/",
	} {
		f.Add(seed)
	}
	o := startOracle(f)
	p, err := New([]string{"http", "https", "ws", "wss", "ftp", "myapp"},
		[]string{"evil.com", "127.0.0.1", "*.phish.test"}, true)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !strings.Contains(raw, "://") {
			raw = "http://" + raw
		}
		accepted, node := agreeWithNode(t, o, p, raw, "sho.rt")
		if !accepted {
			return
		}
		host := strings.TrimSuffix(node.Hostname, ".")
		// Node's own serialization of the denied hosts, IPv4-mapped included.
		if host == "evil.com" || host == "127.0.0.1" || host == "[::ffff:7f00:1]" ||
			host == "sho.rt" || strings.HasSuffix(host, ".phish.test") {
			t.Fatalf("accepted %q: node host %q is denied", raw, node.Hostname)
		}
		if nodeHostPrivate(node.Hostname) {
			t.Fatalf("accepted %q: node host %q is private (deny_private on)", raw, node.Hostname)
		}
	})
}

package urlpolicy

import (
	"strings"
	"testing"
)

// TestLinkDomain: spellings a browser reads as one name map to it; what
// is no name a certificate could be issued for is refused.
func TestLinkDomain(t *testing.T) {
	for in, want := range map[string]string{
		"example.com": "example.com", "Example.COM": "example.com", "example.com.": "example.com",
		"ｅｘａｍｐｌｅ.com": "example.com", "example。com": "example.com", "bücher.example": "xn--bcher-kva.example",
		"BÜCHER.example.": "xn--bcher-kva.example", "xn--bcher-kva.example": "xn--bcher-kva.example",
		"go.sho.rt": "go.sho.rt", "ex%61mple.com": "example.com",
	} {
		if got, err := LinkDomain(in); err != nil || got != want {
			t.Errorf("LinkDomain(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "127.0.0.1", "0x7f.1", "1.2.3.4.", "[::1]", "localhost", "com.", "a_b.example",
		"-a.example", "a-.example", "example.com:443", "exa mple.com", "user@example.com", "example.com/x",
		strings.Repeat("a", 64) + ".example", strings.Repeat("abcdefghi.", 26) + "com", "ev\u202eil.com", "a..example"} {
		if got, err := LinkDomain(in); err == nil {
			t.Errorf("LinkDomain(%q) = %q, want an error", in, got)
		}
	}
	for in, want := range map[string]string{
		"example.com": "example.com", "example.com:8443": "example.com", "EXAMPLE.com.:443": "example.com",
		"[::1]:80": "", "127.0.0.1:80": "", "1.2.3.4": "", "localhost": "", "a_b.example": "", "": "",
	} {
		if got := RequestDomain(in); got != want {
			t.Errorf("RequestDomain(%q) = %q, want %q", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { RequestDomain("go.example.com:443") }); n != 0 {
		t.Errorf("RequestDomain of a canonical host allocates %v times", n)
	}
}

// FuzzLinkDomain: a name LinkDomain accepts is canonical (it maps to
// itself), is what Node's WHATWG URL parser reads as the host of
// http://<input>/ (less a trailing dot), and every spelling of it a
// browser sends (upper case, a trailing dot, a port) is read by
// RequestDomain as the same name; RequestDomain never returns a name
// LinkDomain would refuse.
func FuzzLinkDomain(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "ｅｘａｍｐｌｅ.com", "bücher.example", "127.0.0.1",
		"0x7f.1", "a_b.example", "xn--zz-.example", "ex%61mple.com", "a.b.c.d.e", "EXAMPLE.com:443", "[::1]:80"} {
		f.Add(s)
	}
	o := startOracle(f)
	f.Fuzz(func(t *testing.T, in string) {
		if d := RequestDomain(in); d != "" {
			if again, err := LinkDomain(d); err != nil || again != d {
				t.Fatalf("RequestDomain(%q) = %q, which LinkDomain reads as %q, %v", in, d, again, err)
			}
		}
		d, err := LinkDomain(in)
		if err != nil {
			return
		}
		if again, err := LinkDomain(d); err != nil || again != d {
			t.Fatalf("LinkDomain(%q) = %q, then %q, %v", in, d, again, err)
		}
		for _, v := range []string{d, strings.ToUpper(d), d + ".", d + ":443", strings.ToUpper(d) + ".:8080"} {
			if got := RequestDomain(v); got != d {
				t.Fatalf("RequestDomain(%q) = %q, want %q", v, got, d)
			}
		}
		if a := o.parse(t, "http://"+in+"/"); !a.OK || strings.TrimSuffix(a.Hostname, ".") != d {
			t.Fatalf("LinkDomain(%q) = %q; Node reads the host as %q (ok %v, %s)", in, d, a.Hostname, a.OK, a.Error)
		}
	})
}

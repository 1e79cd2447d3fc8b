package urlpolicy

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
)

func testPolicy() Policy {
	p, err := New([]string{"http", "https"}, []string{"evil.example", "*.phish.test", "Blocked.ORG."}, true)
	if err != nil {
		panic(err)
	}
	return p
}

func TestValidateLongURL(t *testing.T) {
	p := testPolicy()
	self := []string{"sho.rt", "links.example.com"}
	for _, tc := range []struct {
		raw  string
		ok   bool
		want string // part of the error
	}{
		{"https://example.com/path?q=1#frag", true, ""},
		{"http://example.com:8080/", true, ""},
		{"HTTPS://Example.com/", true, ""},
		{"https://[2001:db8::1]/x", true, ""},
		{"https://sub.evil.example/", true, ""}, // exact entries match only themselves
		{"https://phish.test/", true, ""},       // *.suffix matches subdomains only
		{"https://xn--bcher-kva.example/", true, ""},
		{"", false, "required"},
		{"javascript:alert(1)", false, "scheme"},
		{"JavaScript:alert(1)", false, "scheme"},
		{"data:text/html,<script>alert(1)</script>", false, "scheme"},
		{"file:///etc/passwd", false, "scheme"},
		{"ftp://example.com/", false, "scheme"},
		{"https://example.com/a\r\nSet-Cookie: x=1", false, "whitespace"},
		{"https://example.com/a\nb", false, "whitespace"},
		{"https://example.com/a b", false, "whitespace"},
		{"https://example.com/\tb", false, "whitespace"},
		{"https://example.com/\u00a0", false, "whitespace"},
		{"https://example.com/\x00", false, "control"},
		{"https://example.com/\x7f", false, "control"},
		{"https:\\\\evil.example", false, "backslash"},
		{"https://example.com/" + strings.Repeat("a", 2048), false, "2048"},
		{"/relative/path", false, "absolute"},
		{"//example.com/x", false, "absolute"},
		{"example.com", false, "absolute"},
		{"https:opaque", false, "host"},
		{"https:///nohost", false, "host"},
		{"http://.", false, "host"},
		{"http://../", false, "host"},
		{"http://.example.com/", false, "host"},
		{"http://a..example.com/", false, "host"},
		{"https://user:pass@example.com/", false, "user information"},
		{"https://user@example.com/", false, "user information"},
		{"https://evil.example/", false, "not allowed"},
		{"https://EVIL.example./", false, "not allowed"},
		{"https://a.b.phish.test/", false, "not allowed"},
		{"https://blocked.org/", false, "not allowed"},
		{"https://sho.rt/abc", false, "redirect loop"},
		{"http://SHO.RT:8080/abc", false, "redirect loop"},
		{"https://links.example.com./x", false, "redirect loop"},
		{"https://exa mple.com/", false, "whitespace"},
		{"https://%zz/", false, "valid URL"},
		{"\xff\xfe", false, "UTF-8"},
	} {
		_, err := p.Check(tc.raw, self...)
		if tc.ok && err != nil {
			t.Errorf("check(%q) = %v, want ok", tc.raw, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("check(%q) = %v, want an error containing %q", tc.raw, err, tc.want)
		}
	}
}

func TestValidateMaxLength(t *testing.T) {
	p := testPolicy()
	base := "https://example.com/"
	ok := base + strings.Repeat("a", MaxLongURL-len(base))
	if _, err := p.Check(ok); err != nil {
		t.Errorf("check(%d bytes) = %v, want ok", len(ok), err)
	}
	if _, err := p.Check(ok + "a"); err == nil {
		t.Errorf("check(%d bytes) = nil, want an error", len(ok)+1)
	}
}

func TestValidateCustomSchemes(t *testing.T) {
	p, err := New([]string{"https", "MAILTO"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Check("http://example.com/"); err == nil {
		t.Errorf("http accepted with allow_schemes https")
	}
	// mailto has no host: still refused, a link needs a host.
	if _, err := p.Check("mailto:a@example.com"); err == nil {
		t.Errorf("mailto:a@example.com accepted")
	}
}

func FuzzValidateLongURL(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/",
		"javascript:alert(1)",
		"data:text/html;base64,PHNjcmlwdD4=",
		"file:///etc/passwd",
		"https://example.com/\r\nLocation: https://evil.example/",
		"https://example.com/" + strings.Repeat("x", 2100),
		"https://sho.rt/abc",
		"https://evil.example/",
		"https://x.phish.test/",
		"https://u:p@example.com/",
		"http://[::1]:80/",
	} {
		f.Add(seed)
	}
	p := testPolicy()
	f.Fuzz(func(t *testing.T, raw string) {
		out, err := p.Check(raw, "sho.rt")
		if err != nil {
			return
		}
		if !isASCII(out) {
			t.Fatalf("accepted %q stored as %q, not ASCII", raw, out)
		}
		if len(raw) > MaxLongURL {
			t.Fatalf("accepted %d bytes", len(raw))
		}
		for _, r := range raw {
			if unicode.IsControl(r) || unicode.IsSpace(r) {
				t.Fatalf("accepted %q with control or space", raw)
			}
		}
		u, perr := url.Parse(out)
		if perr != nil {
			t.Fatalf("accepted %q stored as %q, not a URL: %v", raw, out, perr)
		}
		if again, err := p.Check(out, "sho.rt"); err != nil || again != out {
			t.Fatalf("stored %q is not stable: check = %q, %v", out, again, err)
		}
		if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		host := strings.TrimSuffix(u.Hostname(), ".")
		if host == "" || u.User != nil {
			t.Fatalf("accepted %q: host %q user %v", raw, host, u.User)
		}
		if host == "sho.rt" || host == "evil.example" || host == "blocked.org" || strings.HasSuffix(host, ".phish.test") {
			t.Fatalf("accepted denied or self host %q", host)
		}
	})
}

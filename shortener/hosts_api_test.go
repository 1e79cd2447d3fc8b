package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/urlpolicy"
)

// postLink posts long to the API and returns the answer.
func postLink(t *testing.T, h *Handler, long string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"long_url": long})
	w := serve(t, h, "POST", "http://sho.rt/api/links", string(body), auth()...)
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("POST %s: decoding %q: %v", body, w.Body, err)
	}
	return w.Code, out
}

// Finding 4: each of the URLs maps, in a browser, to a denied host
// or to the shortener itself, and was created (201) on main.
func TestHostsFindingURLsRefused(t *testing.T) {
	for _, denyPrivate := range []bool{false, true} {
		h := newHandler(t, newMemStore(), func(h *Handler) {
			h.BaseURL = "https://sho.rt"
			h.DenyHosts = []string{"evil.com", "127.0.0.1"}
			h.DenyPrivate = &denyPrivate
		})
		for _, long := range []string{
			"https://ｅｖｉｌ.com",
			"https://evil。com",
			"https://ev\u00adil.com",
			"https://%EF%BD%85vil.com",
			"https://ｓｈｏ.ｒｔ/abc",
			"http://2130706433/",
			"http://0x7f.1/",
			"http://127.1/",
			"http://[::ffff:127.0.0.1]/",
			"https://evil.com\u202e/",
			"https://example.com/\u202egnp.exe",
		} {
			code, out := postLink(t, h, long)
			msg, _ := out["error"].(string)
			if code != http.StatusBadRequest || !strings.Contains(msg, "long_url") {
				t.Errorf("deny_private %v: POST %q = %d %v, want 400 naming long_url", denyPrivate, long, code, out)
			}
		}
	}
}

// A Unicode host is stored and sent in Location as punycode, a non-ASCII
// path percent-encoded.
func TestHostsStoredASCII(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	code, out := postLink(t, h, "https://Bücher.example:443/straße?q=ä#ü")
	const want = "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4#%C3%BC"
	if code != http.StatusCreated || out["long_url"] != want {
		t.Fatalf("POST = %d %v, want 201 long_url %q", code, out, want)
	}
	w := serve(t, h, "GET", "/"+out["code"].(string), "")
	if got := w.Header().Get("Location"); got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
}

// Links stored raw before this change (written into the store directly)
// get an ASCII Location.
func TestHostsLegacyLinkLocationASCII(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, nil)
	now := time.Now().UTC()
	for code, tc := range map[string]struct{ long, want string }{
		"uni": {"https://ｅｖｉｌ.com/a", "https://evil.com/a"},
		"idn": {"https://bücher.example/ü", "https://xn--bcher-kva.example/%C3%BC"},
		"rlo": {"https://example.com/\u202egnp.exe", "https://example.com/%E2%80%AEgnp.exe"},
		// A host that does not map keeps its bytes, percent-encoded.
		"bad": {"https://ev\u202eil.com/", "https://ev%E2%80%AEil.com/"},
		"asc": {"http://0x7f.1/x", "http://0x7f.1/x"},
	} {
		if err := s.Create(context.Background(), link.Link{Code: code, LongURL: tc.long, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // from the store, then from L1
			w := serve(t, h, "GET", "/"+code, "")
			if got := w.Header().Get("Location"); w.Code != http.StatusFound || got != tc.want {
				t.Errorf("GET /%s (%q) = %d Location %q, want 302 %q", code, tc.long, w.Code, got, tc.want)
			}
		}
	}
}

// The same through Redis: a raw value cached by an older version.
func TestHostsLegacyRedisValueLocationASCII(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) {
		h.Redis = &redispool.Config{URL: testenv.RedisURL(t), KeyPrefix: prefix}
	})
	if err := rdb.Set(context.Background(), prefix+":l:legacy1", "L0|https://ｅｖｉｌ.com/\u202e", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	w := serve(t, h, "GET", "/legacy1", "")
	if got := w.Header().Get("Location"); w.Code != http.StatusFound || got != "https://evil.com/%E2%80%AE" {
		t.Errorf("GET /legacy1 = %d Location %q, want 302 https://evil.com/%%E2%%80%%AE", w.Code, got)
	}
}

// deny_private refuses literal private addresses and localhost names in
// every spelling, and nothing public; off, it refuses none of them.
func TestHostsDenyPrivate(t *testing.T) {
	private := []string{
		"http://127.0.0.1/", "http://127.1/", "http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/",
		"http://localhost/", "http://LOCALHOST./", "http://api.localhost:8080/", "http://ｌｏｃａｌｈｏｓｔ/",
		"http://10.1.2.3/", "http://172.16.0.1/", "http://172.31.255.255/", "http://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data/", "http://0xa9fea9fe/", "http://100.64.0.1/", "http://100.100.100.200/",
		"http://0.0.0.0/", "http://0/", "http://0.1.2.3/",
		"http://[::1]/", "http://[::]/", "http://[fe80::1]/", "http://[fc00::1]/", "http://[fd12:3456::1]/",
		"http://[fec0::1]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[::127.0.0.1]/",
		"http://[64:ff9b::10.0.0.1]/",
	}
	public := []string{
		"http://8.8.8.8/", "http://172.32.0.1/", "http://100.128.0.1/", "http://[2001:db8::1]/",
		"http://[::ffff:8.8.8.8]/", "http://[64:ff9b::8.8.8.8]/", "http://localhost.example/", "http://mylocalhost/",
		"https://example.com/",
	}
	on := newURLPolicyT(t, true)
	off := newURLPolicyT(t, false)
	for _, raw := range private {
		if _, err := on.Check(raw); err == nil || !strings.Contains(err.Error(), "deny_private") {
			t.Errorf("deny_private on: check(%q) = %v, want a deny_private refusal", raw, err)
		}
		if _, err := off.Check(raw); err != nil {
			t.Errorf("deny_private off: check(%q) = %v, want ok", raw, err)
		}
	}
	for _, raw := range public {
		if _, err := on.Check(raw); err != nil {
			t.Errorf("deny_private on: check(%q) = %v, want ok", raw, err)
		}
	}
}

func newURLPolicyT(t *testing.T, denyPrivate bool) urlpolicy.Policy {
	t.Helper()
	p, err := urlpolicy.New([]string{"http", "https"}, nil, denyPrivate)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deny_private is on by default, and off lets an intranet target through;
// existing links to private targets still redirect.
func TestHostsDenyPrivateHandler(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, nil)
	if code, out := postLink(t, h, "http://192.168.1.10/wiki"); code != http.StatusBadRequest {
		t.Errorf("default: POST intranet URL = %d %v, want 400", code, out)
	}
	off := false
	h2 := newHandler(t, s, func(h *Handler) { h.DenyPrivate = &off })
	code, out := postLink(t, h2, "http://192.168.1.10/wiki")
	if code != http.StatusCreated {
		t.Fatalf("deny_private off: POST intranet URL = %d %v, want 201", code, out)
	}
	w := serve(t, h, "GET", "/"+out["code"].(string), "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != "http://192.168.1.10/wiki" {
		t.Errorf("existing private link under deny_private on = %d %q, want 302", w.Code, w.Header().Get("Location"))
	}
}

// deny_hosts entries are read as hosts too: Unicode, numeric, IPv6 and
// percent-encoded entries match every spelling; a bad entry fails Validate.
func TestHostsDenyEntriesNormalised(t *testing.T) {
	p, err := urlpolicy.New([]string{"http", "https"},
		[]string{"ＥＶＩＬ.com", "2130706433", "::1", "*.Bücher.example", "%65xample.org."}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		"https://evil.com/", "https://evil.com./", "http://127.0.0.1/", "http://[::ffff:7f00:1]/",
		"http://[0:0::1]/", "https://a.xn--bcher-kva.example/", "https://a.bücher.example/", "https://EXAMPLE.org/",
	} {
		if _, err := p.Check(raw); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("check(%q) = %v, want 'not allowed'", raw, err)
		}
	}
	if _, err := p.Check("https://bücher.example/"); err != nil {
		t.Errorf("the *. entry refused its own domain: %v", err)
	}
	for _, bad := range []string{"a..b", "*.127.0.0.1", "ev\u202eil.com", "xn--a", "[::1", "a b"} {
		h := &Handler{DenyHosts: []string{bad}}
		if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "deny_hosts") {
			t.Errorf("Validate(deny_hosts %q) = %v, want an error naming deny_hosts", bad, err)
		}
	}
}

// The self-loop check compares hosts as a browser reads them, the
// request's Host and base_url alike.
func TestHostsSelfLoop(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.BaseURL = "https://ｌｉｎｋｓ.example" })
	for _, long := range []string{
		"https://links.example/x", "https://LINKS.example./x", "https://ｓｈｏ.ｒｔ/abc", "https://sho%2Ert/abc",
	} {
		if code, out := postLink(t, h, long); code != http.StatusBadRequest || !strings.Contains(out["error"].(string), "redirect loop") {
			t.Errorf("POST %q = %d %v, want 400 redirect loop", long, code, out)
		}
	}
}

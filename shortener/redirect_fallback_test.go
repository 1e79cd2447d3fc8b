package shortener

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// A live link that does not serve redirects to its fallback URL (302,
// no query forwarded), counted as the answer it replaces: revoked,
// expired (when stored, and while in L1), before valid_from, max_clicks
// used up. Without a fallback the answers are today's.
func TestLinkFallback(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	h := newHandler(t, newMemStore(), func(h *Handler) {
		h.now = func() time.Time { return time.Unix(0, clock.Load()) }
		h.ForwardQuery = true
	})
	now := time.Unix(0, clock.Load())
	const fb = "https://example.com/fallback"
	cases := []struct {
		name   string
		l      link.Link
		visits []int // statuses of successive GETs
	}{
		{"revoked", link.Link{RevokedAt: now.Add(-time.Minute)}, []int{302, 302}},
		{"expired", link.Link{ExpiresAt: now.Add(-time.Minute)}, []int{302}},
		{"not yet valid", link.Link{ValidFrom: now.Add(time.Hour)}, []int{302, 302}},
		{"used up", link.Link{MaxClicks: 1}, []int{0, 302, 302}}, // 0: the long URL
	}
	for _, c := range cases {
		for _, fallback := range []string{fb, ""} {
			l := c.l
			l.Code, l.LongURL, l.FallbackURL = "fb"+strings.ReplaceAll(c.name, " ", "")+map[bool]string{true: "f", false: "n"}[fallback != ""], "https://example.com/long", fallback
			putLink(t, h, l)
			for i, want := range c.visits {
				w := visit(t, h, "GET", "/"+l.Code+"?q=1", "")
				wantLoc := fallback
				switch {
				case want == 0:
					want, wantLoc = 302, "https://example.com/long?q=1"
				case fallback == "" && c.name == "not yet valid":
					want, wantLoc = 404, ""
				case fallback == "":
					want, wantLoc = 410, ""
				}
				if w.Code != want || w.Header().Get("Location") != wantLoc {
					t.Errorf("%s (fallback %q), visit %d: %d %q, want %d %q", c.name, fallback, i, w.Code, w.Header().Get("Location"), want, wantLoc)
				}
			}
		}
	}
	// Expiring while in L1.
	putLink(t, h, link.Link{Code: "fbsoon", LongURL: "https://example.com/long", ExpiresAt: now.Add(time.Minute), FallbackURL: fb})
	before := counterValue(h.metrics.redirects.WithLabelValues(sourceLocal, resultGone))
	visit(t, h, "GET", "/fbsoon", "")
	clock.Add(int64(2 * time.Minute))
	if w := visit(t, h, "GET", "/fbsoon?q=1", ""); w.Code != 302 || w.Header().Get("Location") != fb {
		t.Errorf("expired in L1: %d %q, want 302 %q", w.Code, w.Header().Get("Location"), fb)
	}
	if got := counterValue(h.metrics.redirects.WithLabelValues(sourceLocal, resultGone)); got != before+1 {
		t.Errorf("gone from L1 counted %v times, want 1", got-before)
	}
}

// not_found_redirect sends unknown and invalid codes there; root_redirect
// the bare path; unset, both keep today's answers.
func TestNotFoundAndRootRedirect(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) {
		h.NotFoundRedirect, h.RootRedirect = "https://example.com/404", "https://example.com/home"
	})
	for target, want := range map[string]string{
		"/nosuchcode": "https://example.com/404", "/bad%20code!": "https://example.com/404", "/": "https://example.com/home",
	} {
		for _, m := range []string{"GET", "HEAD"} {
			if w := visit(t, h, m, target, ""); w.Code != 302 || w.Header().Get("Location") != want {
				t.Errorf("%s %s = %d %q, want 302 %q", m, target, w.Code, w.Header().Get("Location"), want)
			}
		}
	}
	if w := visit(t, h, "POST", "/", ""); w.Header().Get("X-Next") == "" {
		t.Errorf("POST / = %d, want it passed on", w.Code)
	}
	plain := newHandler(t, newMemStore(), nil)
	if w := visit(t, plain, "GET", "/nosuchcode", ""); w.Code != 404 {
		t.Errorf("GET unknown without not_found_redirect = %d, want 404", w.Code)
	}
	if w := visit(t, plain, "GET", "/", ""); w.Header().Get("X-Next") == "" {
		t.Errorf("GET / without root_redirect = %d, want it passed on", w.Code)
	}
}

// A custom-scheme app_url answers a page that opens the app, then the
// web URL: URLs escaped for HTML and JavaScript, a CSP allowing only the
// nonce'd inline script, the redirect's Cache-Control; HEAD gets the
// headers. An https app_url is a plain redirect.
func TestAppLinkPage(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.AppSchemes = []string{"myapp"}; h.SourceHeader = true })
	web := `https://example.com/store?a=1&b="x"<script>'`
	app := `myapp://open/item?x=</script><script>alert(1)</script>&q='"\`
	rules := map[string]any{"rules": []any{
		map[string]any{"name": "ios", "if": map[string]any{"os": []string{"ios"}}, "url": web, "app_url": app},
		map[string]any{"name": "android", "if": map[string]any{"os": []string{"android"}}, "url": "https://example.com/play", "app_url": "https://app.example.com/open"},
	}}
	tj, _ := json.Marshal(rules)
	putLink(t, h, link.Link{Code: "applink", LongURL: "https://example.com/long", Targeting: tj})
	w := visit(t, h, "GET", "/applink", "", "User-Agent", iphoneUA)
	body := w.Body.String()
	csp := w.Header().Get("Content-Security-Policy")
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || w.Header().Get("Cache-Control") != DefaultCacheControl ||
		w.Header().Get("X-Shortener-Rule") != "ios" {
		t.Fatalf("app page: %d %v", w.Code, w.Header())
	}
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'nonce-") {
		t.Errorf("CSP %q", csp)
	}
	nonce := strings.TrimSuffix(strings.SplitN(strings.SplitN(csp, "'nonce-", 2)[1], "'", 2)[0], "'")
	if strings.Count(body, "<script") != 1 || !strings.Contains(body, `<script nonce="`+nonce+`">`) || strings.Count(body, "</script>") != 1 {
		t.Errorf("the page has other scripts than its own:\n%s", body)
	}
	if strings.Contains(body, `"x"<script>`) || !strings.Contains(body, `href="https://example.com/store?a=1&amp;b=&#34;x&#34;&lt;script&gt;&#39;"`) {
		t.Errorf("the web URL is not HTML-escaped:\n%s", body)
	}
	if !strings.Contains(body, `location.replace("myapp://open/item?x=\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\u0026q=\u0027\u0022\u005c")`) {
		t.Errorf("the app URL is not JS-escaped:\n%s", body)
	}
	if !strings.Contains(body, "<noscript>") || !strings.Contains(body, "1500") {
		t.Errorf("no noscript fallback or delay:\n%s", body)
	}
	if w := visit(t, h, "HEAD", "/applink", "", "User-Agent", iphoneUA); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD: %d, %d bytes, CSP %q", w.Code, w.Body.Len(), w.Header().Get("Content-Security-Policy"))
	}
	android := "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36"
	if w := visit(t, h, "GET", "/applink", "", "User-Agent", android); w.Code != 302 || w.Header().Get("Location") != "https://app.example.com/open" {
		t.Errorf("universal link: %d %q", w.Code, w.Header().Get("Location"))
	}
	if w := visit(t, h, "GET", "/applink", "", "User-Agent", windowsUA); w.Code != 302 || w.Header().Get("Location") != "https://example.com/long" {
		t.Errorf("no rule: %d %q", w.Code, w.Header().Get("Location"))
	}
}

// app_links files are served as JSON at their well-known paths, to GET
// and HEAD, before any code lookup; a file is read at Provision.
func TestAppLinksFiles(t *testing.T) {
	file := filepath.Join(t.TempDir(), "assetlinks.json")
	if err := os.WriteFile(file, []byte(`[{"relation":["delegate_permission/common.handle_all_urls"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, newMemStore(), func(h *Handler) {
		h.AppLinks = &AppLinks{AppleAppSiteAssociation: json.RawMessage(`{"applinks":{"details":[]}}`), AssetlinksFile: file}
	})
	for path, want := range map[string]string{
		"/.well-known/apple-app-site-association": `{"applinks":{"details":[]}}`,
		"/.well-known/assetlinks.json":            `[{"relation":["delegate_permission/common.handle_all_urls"]}]`,
	} {
		w := visit(t, h, "GET", path, "")
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Body.String() != want {
			t.Errorf("GET %s = %d %q %q", path, w.Code, w.Header().Get("Content-Type"), w.Body.String())
		}
		if w := visit(t, h, "HEAD", path, ""); w.Code != 200 || w.Body.Len() != 0 {
			t.Errorf("HEAD %s = %d, %d bytes", path, w.Code, w.Body.Len())
		}
		if w := visit(t, h, "POST", path, ""); w.Header().Get("X-Next") == "" {
			t.Errorf("POST %s = %d, want it passed on", path, w.Code)
		}
	}
	big := filepath.Join(t.TempDir(), "big.json")
	_ = os.WriteFile(big, []byte(`"`+strings.Repeat("a", maxAppLinksFile)+`"`), 0o600)
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"applinks":`), 0o600)
	for _, a := range []*AppLinks{{AssetlinksFile: big}, {AssetlinksFile: bad}, {AssetlinksFile: filepath.Join(t.TempDir(), "none")}} {
		h := &Handler{Store: "embedded", Path: filepath.Join(t.TempDir(), "l.db"), dataDir: t.TempDir()}
		h.AppLinks = a
		if err := provision(t, h); err == nil {
			t.Errorf("Provision with app_links %+v: no error", a)
		}
	}
}

// The Caddyfile subdirectives and their errors, with the line.
func TestDestinationsCaddyfile(t *testing.T) {
	var h Handler
	d := caddyfile.NewTestDispenser(`shortener {
		not_found_redirect https://example.com/404
		root_redirect https://example.com/
		app_links {
			apple_app_site_association /etc/aasa.json
			assetlinks /etc/assetlinks.json
		}
	}`)
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if h.NotFoundRedirect != "https://example.com/404" || h.RootRedirect != "https://example.com/" || h.AppLinks == nil ||
		h.AppLinks.AppleAppSiteAssociationFile != "/etc/aasa.json" || h.AppLinks.AssetlinksFile != "/etc/assetlinks.json" {
		t.Errorf("parsed %+v %+v", h.destinations, h.AppLinks)
	}
	for input, want := range map[string]string{
		"not_found_redirect":                                         "wrong argument count",
		"not_found_redirect a b":                                     "wrong argument count",
		"not_found_redirect ftp://example.com/":                      "shortener: invalid not_found_redirect \"ftp://example.com/\": scheme 'ftp' is not allowed, at Testfile:2",
		"root_redirect /relative":                                    "invalid root_redirect \"/relative\": must be an absolute URL, at Testfile:2",
		"deny_hosts example.com\nroot_redirect https://example.com/": "invalid root_redirect",
		"app_links {\nnope x\n}":                                     "unrecognized app_links setting 'nope'",
		"app_links {\nassetlinks\n}":                                 "wrong argument count",
		"app_links x":                                                "wrong argument count",
	} {
		var h Handler
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser("shortener {\n" + input + "\n}"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", input, err, want)
		}
	}
	for _, a := range []*AppLinks{{Assetlinks: json.RawMessage(`[`)}, {Assetlinks: json.RawMessage(`[]`), AssetlinksFile: "x"}} {
		h := &Handler{}
		h.AppLinks = a
		if err := h.validate(nil); err == nil {
			t.Errorf("app_links %+v: no error", a)
		}
	}
	_ = http.StatusOK
}

// A link's redirect_status and forward_query apply to the destination its
// targeting chose, as to its long URL.
func TestTargetingKeepsLinkRules(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.Status = 301 })
	on := true
	putLink(t, h, link.Link{Code: "ruled", LongURL: "https://example.com/long", RedirectStatus: 307, ForwardQuery: &on,
		Targeting: []byte(`{"rules":[{"if":{"language":["fr"]},"url":"https://example.com/fr?x=1"}]}`)})
	for lang, want := range map[string]string{"fr": "https://example.com/fr?x=1&utm=a", "de": "https://example.com/long?utm=a"} {
		if w := visit(t, h, "GET", "/ruled?utm=a", "", "Accept-Language", lang); w.Code != 307 || w.Header().Get("Location") != want {
			t.Errorf("%s: %d %q, want 307 %q", lang, w.Code, w.Header().Get("Location"), want)
		}
	}
}

// A link made through the API redirects by its rules, variants and
// fallback: what the API stores is what the redirect reads.
func TestTargetingThroughAPI(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.SourceHeader = true })
	out := create(t, h, `{"long_url":"https://example.com/long","code":"viaapi","fallback_url":"https://example.com/ended",
		"rules":[{"name":"French","if":{"language":["fr"]},"url":"https://example.com/fr"}],
		"variants":[{"name":"a","url":"https://example.com/a","weight":50},{"name":"b","url":"https://example.com/b","weight":50}]}`)
	if w := visit(t, h, "GET", "/"+out.Code, "", "Accept-Language", "fr-FR"); w.Header().Get("Location") != "https://example.com/fr" {
		t.Errorf("French visitor: %d %q", w.Code, w.Header().Get("Location"))
	}
	w := visit(t, h, "GET", "/"+out.Code, "", "Accept-Language", "de")
	if v := w.Header().Get("X-Shortener-Variant"); (v != "a" && v != "b") || w.Header().Get("Location") != "https://example.com/"+v {
		t.Errorf("other visitor: %d %q variant %q", w.Code, w.Header().Get("Location"), v)
	}
	if w := serve(t, h, "DELETE", "/api/links/"+out.Code, "", auth()...); w.Code/100 != 2 {
		t.Fatalf("DELETE: %d", w.Code)
	}
	if w := visit(t, h, "GET", "/"+out.Code, ""); w.Code != 302 || w.Header().Get("Location") != "https://example.com/ended" {
		t.Errorf("revoked: %d %q, want 302 to the fallback", w.Code, w.Header().Get("Location"))
	}
}

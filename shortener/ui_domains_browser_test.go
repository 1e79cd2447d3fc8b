package shortener

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/domainapi"
)

// TestUIBrowserDomains is issue 37's dashboard in a real browser
// (e2e/domains.mjs): with link domains a.example (whose keys scope the
// second API key to it) and b.example, and the code "same" on each and on
// the default domain (made here through the API with ?domain=), the
// scoped key's session picks from a.example alone (no default domain, no
// Domains page) and sees a.example's link and no other; the unscoped
// key's session switches between the default domain, a.example and
// b.example and sees each one's link (its page, short URL and QR code on
// that domain), creates a link on b.example from the page, and creates,
// edits and deletes a domain on the Domains page (a domain with a link
// deleted only with its links revoked, after the 409). Here: the store
// holds what the page saved.
func TestUIBrowserDomains(t *testing.T) {
	needBrowser(t)
	h := newHandler(t, nil, func(h *Handler) {
		h.Store, h.Path = "embedded", filepath.Join(t.TempDir(), "links.db")
		h.UI, h.APIKeys = "/admin", []string{testKey, scopedKey}
	})
	for _, body := range []string{`{"host":"a.example","keys":["` + fingerprintOf(scopedKey) + `"]}`, `{"host":"b.example"}`} {
		if w := serve(t, h, "POST", "/api/domains", body, auth()...); w.Code != http.StatusCreated {
			t.Fatalf("domain %s: %d %s", body, w.Code, w.Body)
		}
	}
	for target, dest := range map[string]string{
		"/api/links?domain=a.example": "https://example.com/on-a",
		"/api/links?domain=b.example": "https://example.com/on-b",
		"/api/links":                  "https://example.com/default",
	} {
		if w := serve(t, h, "POST", target, `{"long_url":"`+dest+`","code":"same"}`, auth()...); w.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", target, w.Code, w.Body)
		}
	}
	srv := dashboardServer(t, h, nil)
	out := runNode(t, "domains.mjs", 150*time.Second,
		"BASE="+srv.URL, "UI=/admin/", "WRITE_KEY="+testKey, "SCOPED_KEY="+scopedKey, "SCOPED_FP="+fingerprintOf(scopedKey))
	var res struct{ Created string }
	decodeResult(t, out, &res)

	w := serve(t, h, "GET", "/api/domains", "", auth()...)
	var ds struct{ Domains []domainapi.DomainResponse }
	if err := json.Unmarshal(w.Body.Bytes(), &ds); err != nil || w.Code != http.StatusOK {
		t.Fatalf("GET /api/domains: %d %s", w.Code, w.Body)
	}
	hosts := map[string]domainapi.DomainResponse{}
	for _, d := range ds.Domains {
		hosts[d.Host] = d
	}
	if len(hosts) != 3 || hosts["a.example"].Host == "" || hosts["b.example"].Host == "" {
		t.Errorf("domains after the page: %+v", ds.Domains)
	}
	c, ok := hosts[res.Created]
	if !ok || res.Created != "c.example" {
		t.Fatalf("the domain the page created: %q, stored %+v", res.Created, ds.Domains)
	}
	if c.RootRedirect == nil || *c.RootRedirect != "https://example.com/home" || c.NotFoundRedirect == nil ||
		*c.NotFoundRedirect != "https://example.com/missing" || len(c.Keys) != 1 || c.Keys[0] != fingerprintOf(scopedKey) {
		t.Errorf("c.example as stored: %+v", c)
	}
	// The page's link on b.example is there, and nowhere else.
	if w := serve(t, h, "GET", "/api/links/from-page?domain=b.example", "", auth()...); w.Code != http.StatusOK {
		t.Errorf("the page's link on b.example: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "GET", "/api/links/from-page", "", auth()...); w.Code != http.StatusNotFound {
		t.Errorf("the page's link on the default domain: %d, want 404", w.Code)
	}
}

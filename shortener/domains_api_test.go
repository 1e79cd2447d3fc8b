package shortener

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

const scopedKey = "scoped-key-0123456789"

func fingerprintOf(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:8])
}

// TestDomainsAPI: link domains through the API, each refusal naming its
// field; a key scoped to a domain sees and reads only it and manages
// none; a link stored under a domain answers on that host only, beside
// the default domain's link of the same code; root, not-found and
// .well-known answers per domain; a domain with links is deleted only
// with force, which revokes them.
func TestDomainsAPI(t *testing.T) {
	s := embeddedStore(t)
	h := newHandler(t, s, func(h *Handler) {
		h.APIKeys = []string{testKey, scopedKey}
		h.ClicksOff = true
		h.CodeFilterOff = true // links are written to the store directly below
	})
	for body, want := range map[string]string{
		`{"host":"127.0.0.1"}`: "host: a link domain is a name",
		`{"host":"localhost"}`: "host: a link domain needs at least two labels",
		`{"host":"a.example","root_redirect":"javascript:alert(1)"}`: "root_redirect:",
		`{"host":"a.example","keys":["nothex"]}`:                     "keys[0]:",
		`{"host":"a.example","assetlinks":"x"}`:                      "assetlinks: must be a JSON object or array",
		`{"host":"a.example","bogus":1}`:                             "body:",
	} {
		w := serve(t, h, "POST", "/api/domains", body, auth()...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), want) {
			t.Errorf("%s: %d %s, want 400 %q", body, w.Code, w.Body, want)
		}
	}
	w := serve(t, h, "POST", "/api/domains", `{"host":"Go.Example.COM.","root_redirect":"https://example.com/home",`+
		`"not_found_redirect":"https://example.com/missing","assetlinks":[{"relation":["x"]}],"keys":["`+fingerprintOf(scopedKey)+`"]}`, auth()...)
	if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"host":"go.example.com"`) {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/domains", `{"host":"go.example.com"}`, auth()...); w.Code != http.StatusConflict {
		t.Errorf("a second go.example.com: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/domains", `{"host":"other.example"}`, auth()...); w.Code != http.StatusCreated {
		t.Fatalf("create other.example: %d %s", w.Code, w.Body)
	}
	scoped := []string{"Authorization", "Bearer " + scopedKey}
	var list struct{ Domains []struct{ Host string } }
	_ = json.Unmarshal(serve(t, h, "GET", "/api/domains", "", scoped...).Body.Bytes(), &list)
	if len(list.Domains) != 1 || list.Domains[0].Host != "go.example.com" {
		t.Errorf("the scoped key lists %+v, want go.example.com alone", list.Domains)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/domains/other.example", ""},
		{"POST", "/api/domains", `{"host":"third.example"}`},
		{"PATCH", "/api/domains/go.example.com", `{"root_redirect":null}`},
		{"DELETE", "/api/domains/go.example.com", ""},
	} {
		if w := serve(t, h, c.method, c.path, c.body, scoped...); w.Code != http.StatusForbidden {
			t.Errorf("scoped %s %s: %d %s, want 403", c.method, c.path, w.Code, w.Body)
		}
	}
	if w := serve(t, h, "GET", "/api/domains/GO.example.com.", "", scoped...); w.Code != http.StatusOK {
		t.Errorf("the scoped key reads its domain: %d %s", w.Code, w.Body)
	}

	ctx := context.Background()
	for key, dest := range map[string]string{"abc": "https://example.com/default", link.DomainKey("go.example.com", "abc"): "https://example.com/go"} {
		if err := s.Create(ctx, link.Link{Code: key, LongURL: dest, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for target, want := range map[string]string{
		"http://sho.rt/abc":                       "https://example.com/default",
		"http://go.example.com/abc":               "https://example.com/go",
		"http://GO.example.com.:8443/abc":         "https://example.com/go",
		"http://go.example.com/":                  "https://example.com/home",
		"http://go.example.com/nope":              "https://example.com/missing",
		"http://other.example/abc":                "", // a domain without the code or redirects: 404
		"http://go.example.com/.well-known/x.txt": "https://example.com/missing",
	} {
		w := serve(t, h, "GET", target, "")
		if got := w.Header().Get("Location"); got != want {
			t.Errorf("GET %s: %d Location %q, want %q", target, w.Code, got, want)
		}
	}
	if w := serve(t, h, "GET", "http://go.example.com/.well-known/assetlinks.json", ""); w.Code != http.StatusOK || w.Body.String() != `[{"relation":["x"]}]` {
		t.Errorf("assetlinks: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "DELETE", "/api/domains/go.example.com", "", auth()...); w.Code != http.StatusConflict {
		t.Errorf("delete with links: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "DELETE", "/api/domains/go.example.com?force=true", "", auth()...); w.Code != http.StatusNoContent {
		t.Fatalf("delete with force: %d %s", w.Code, w.Body)
	}
	if l, err := s.Get(ctx, link.DomainKey("go.example.com", "abc")); err != nil || l.RevokedAt.IsZero() {
		t.Errorf("the domain's link after a forced delete: %+v, %v", l, err)
	}
	if l, err := s.Get(ctx, "abc"); err != nil || !l.RevokedAt.IsZero() {
		t.Errorf("the default domain's link after a forced delete: %+v, %v", l, err)
	}
}

// TestCaddyfileDomainZones: domain_zones takes link domain names; another
// name fails at load with its line.
func TestCaddyfileDomainZones(t *testing.T) {
	h, err := parse("shortener {\n domain_zones sho.rt Example.NET.\n}")
	if err != nil || strings.Join(h.DomainZones, " ") != "sho.rt Example.NET." {
		t.Errorf("parsed %v, %v", h.DomainZones, err)
	}
	for input, want := range map[string]string{
		"shortener {\n domain_zones\n}":                "wrong argument count",
		"shortener {\n domain_zones 10.0.0.1\n}":       "a link domain is a name, not an IP address, at Testfile:2",
		"shortener {\n domain_zones sho.rt bad_z.x\n}": "domain_zones \"bad_z.x\"",
	} {
		if _, err := parse(input); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", input, err, want)
		}
	}
}

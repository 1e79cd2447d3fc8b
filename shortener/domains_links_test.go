package shortener

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestLinksOnDomains: the same code on two link domains and the default
// domain, made through the API with ?domain=, redirects to three
// destinations, on the embedded store and on two instances sharing
// PostgreSQL and Redis (the second reading what the first made); reads,
// edits, lists, batches and exports keep to their domain; a key scoped to
// a domain is refused everywhere else.
func TestLinksOnDomains(t *testing.T) {
	dsn := testenv.Postgres(t)
	_, prefix := testenv.Redis(t)
	redisURL := testenv.RedisURL(t)
	for name, configure := range map[string]func(h *Handler){
		"embedded": func(h *Handler) { h.Store, h.Path = "embedded", filepath.Join(t.TempDir(), "links.db") },
		"postgres": func(h *Handler) {
			h.Store, h.DSN = "postgres", dsn
			h.Redis = &redispool.Config{URL: redisURL, KeyPrefix: prefix}
		},
	} {
		t.Run(name, func(t *testing.T) {
			conf := func(h *Handler) {
				configure(h)
				h.APIKeys = []string{testKey, scopedKey}
				h.ClicksInterval = caddy.Duration(20 * time.Millisecond)
			}
			h := newHandler(t, nil, conf)
			linksOnDomains(t, h, name, func() *Handler {
				if name == "embedded" {
					return h // one instance: the file is held by one process
				}
				return newHandler(t, nil, conf)
			})
		})
	}
}

func linksOnDomains(t *testing.T, h *Handler, name string, other func() *Handler) {
	for _, body := range []string{`{"host":"a.example","keys":["` + fingerprintOf(scopedKey) + `"]}`, `{"host":"b.example"}`} {
		if w := serve(t, h, "POST", "/api/domains", body, auth()...); w.Code != http.StatusCreated {
			t.Fatalf("domain %s: %d %s", body, w.Code, w.Body)
		}
	}
	for target, dest := range map[string]string{
		"/api/links?domain=A.Example.": "https://example.com/on-a",
		"/api/links?domain=b.example":  "https://example.com/on-b",
		"/api/links":                   "https://example.com/default",
	} {
		w := serve(t, h, "POST", target, `{"long_url":"`+dest+`","code":"same"}`, auth()...)
		if w.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", target, w.Code, w.Body)
		}
		var l link.Response
		_ = json.Unmarshal(w.Body.Bytes(), &l)
		if host, _, _ := strings.Cut(strings.TrimPrefix(target, "/api/links?domain="), "."); l.Code != "same" ||
			target != "/api/links" && !strings.HasPrefix(l.ShortURL, "https://"+strings.ToLower(host)+".example/same") {
			t.Errorf("POST %s answered %+v", target, l)
		}
	}
	w := serve(t, h, "POST", "/api/links?domain=a.example", `{"long_url":"https://example.com/random-a"}`, auth()...)
	var random link.Response
	_ = json.Unmarshal(w.Body.Bytes(), &random)
	if w.Code != http.StatusCreated || random.Domain != "a.example" || random.ShortURL != "https://a.example/"+random.Code {
		t.Fatalf("a random code on a.example: %d %s", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/links/batch?domain=b.example", `{"links":[{"long_url":"https://example.com/batch-b","code":"bat"}]}`, auth()...); w.Code != http.StatusOK && w.Code != http.StatusCreated && w.Code != http.StatusMultiStatus {
		t.Errorf("a batch on b.example: %d %s", w.Code, w.Body)
	}
	for _, node := range []*Handler{h, other()} {
		for target, want := range map[string]string{
			"http://a.example/same":           "https://example.com/on-a",
			"http://b.example/same":           "https://example.com/on-b",
			"http://sho.rt/same":              "https://example.com/default",
			"http://a.example/" + random.Code: "https://example.com/random-a",
			"http://b.example/bat":            "https://example.com/batch-b",
		} {
			if got := serve(t, node, "GET", target, "").Header().Get("Location"); got != want {
				t.Errorf("%s: GET %s went to %q, want %q", name, target, got, want)
			}
		}
		if w := serve(t, node, "GET", "http://sho.rt/"+random.Code, ""); w.Code != http.StatusNotFound {
			t.Errorf("%s: a.example's random code on the default domain: %d", name, w.Code)
		}
	}
	if w := serve(t, h, "PATCH", "/api/links/same?domain=a.example", `{"title":"on a"}`, append(auth(), "Content-Type", "application/merge-patch+json")...); w.Code != http.StatusOK {
		t.Errorf("patch on a: %d %s", w.Code, w.Body)
	}
	var b link.Response
	_ = json.Unmarshal(serve(t, h, "GET", "/api/links/same?domain=b.example", "", auth()...).Body.Bytes(), &b)
	if b.LongURL != "https://example.com/on-b" || b.Title != nil || b.Domain != "b.example" {
		t.Errorf("b.example's same after a's edit: %+v", b)
	}
	for target, want := range map[string]int{"/api/links?domain=a.example": 2, "/api/links?domain=b.example": 2, "/api/links": 1} {
		var page struct{ Links []link.Response }
		_ = json.Unmarshal(serve(t, h, "GET", target, "", auth()...).Body.Bytes(), &page)
		if len(page.Links) != want {
			t.Errorf("GET %s listed %d links, want %d", target, len(page.Links), want)
		}
	}
	csv := serve(t, h, "GET", "/api/links/export?format=csv&domain=a.example", "", auth()...).Body.String()
	if !strings.Contains(csv, "same,https://a.example/same,") || strings.Contains(csv, "on-b") {
		t.Errorf("a.example's export:\n%s", csv)
	}
	// The redirects above were clicks: counted per domain.
	eventually(t, 20*time.Second, "a.example's same counted apart from b.example's", func() bool {
		var a, b struct {
			Clicks int64 `json:"total"`
			Domain string
		}
		_ = json.Unmarshal(serve(t, h, "GET", "/api/links/same/stats?domain=a.example", "", auth()...).Body.Bytes(), &a)
		_ = json.Unmarshal(serve(t, h, "GET", "/api/links/same/stats?domain=b.example", "", auth()...).Body.Bytes(), &b)
		return a.Clicks >= 1 && b.Clicks >= 1 && a.Clicks+b.Clicks <= 4 && a.Domain == "a.example"
	})
	if body := serve(t, h, "GET", "/api/stats", "", auth()...).Body.String(); !strings.Contains(body, `{"code":"same","domain":"a.example","clicks":`) {
		t.Errorf("the overview's top links name no domain: %s", body)
	}
	scoped := []string{"Authorization", "Bearer " + scopedKey}
	for _, c := range []struct {
		method, target, body string
		want                 int
	}{
		{"GET", "/api/links?domain=a.example", "", http.StatusOK},
		{"GET", "/api/links/same?domain=a.example", "", http.StatusOK},
		{"GET", "/api/links?domain=b.example", "", http.StatusForbidden},
		{"GET", "/api/links/same?domain=b.example", "", http.StatusForbidden},
		{"POST", "/api/links?domain=b.example", `{"long_url":"https://example.com/x"}`, http.StatusForbidden},
		{"PATCH", "/api/links/same?domain=b.example", `{"title":"x"}`, http.StatusForbidden},
		{"GET", "/api/links", "", http.StatusForbidden},
		{"GET", "/api/links/same", "", http.StatusForbidden},
		{"GET", "/api/links?domain=nope.example", "", http.StatusNotFound},
		{"GET", "/api/stats", "", http.StatusForbidden},
	} {
		if w := serve(t, h, c.method, c.target, c.body, append(scoped, "Content-Type", "application/json")...); w.Code != c.want {
			t.Errorf("scoped %s %s: %d %s, want %d", c.method, c.target, w.Code, w.Body, c.want)
		}
	}
}

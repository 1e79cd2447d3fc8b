package shortener

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzAPICreate sends any body to POST /api/links: no panic, only the
// documented statuses, every answer JSON, and a link answered 201 is valid,
// stored, and redirects to exactly its URL with no header injection.
func FuzzAPICreate(f *testing.F) {
	for _, seed := range []string{
		`{"long_url":"https://example.com/a?b=c#d"}`,
		`{"long_url":"https://example.com/","code":"my-code_1"}`,
		`{"long_url":"https://example.com/","codes":"sequential"}`,
		`{"long_url":"https://example.com/","expires_at":"2099-01-01T00:00:00Z"}`,
		`{"long_url":"javascript:alert(1)"}`,
		`{"long_url":"https://user:pw@example.com/"}`,
		`{"long_url":"https://sho.rt/loop"}`,
		`{"long_url":"https://example.com/","code":"../x"}`,
		`{"long_url":"https://example.com/\r\nX: y"}`,
		`{"long_url":1}`, `[]`, `null`, `{`, ``, `{"extra":1}`,
		`{"long_url":"https://example.com/"}{"long_url":"https://evil.com/"}`,
	} {
		f.Add(seed)
	}
	s := newMemStore()
	h := newHandler(f, s, func(h *Handler) { h.DenyHosts = []string{"evil.com"} })
	f.Fuzz(func(t *testing.T, body string) {
		w := serve(t, h, "POST", "/api/links", body, auth()...)
		switch w.Code {
		case http.StatusCreated, http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("body %q: status %d %s", body, w.Code, w.Body)
		}
		if !json.Valid(w.Body.Bytes()) || w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("body %q: answer %q is not JSON", body, w.Body)
		}
		if w.Code != http.StatusCreated {
			return
		}
		var out linkResponse
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if _, err := h.policy.check(out.LongURL, "sho.rt"); err != nil {
			t.Fatalf("created a link to a refused URL %q: %v", out.LongURL, err)
		}
		if strings.Contains(out.LongURL, "evil.com") && strings.Contains(strings.ToLower(out.LongURL), "://evil.com") {
			t.Fatalf("created a link to a denied host: %q", out.LongURL)
		}
		r := serve(t, h, "GET", "/"+out.Code, "")
		if r.Code != http.StatusFound || r.Header().Get("Location") != out.LongURL {
			t.Fatalf("created %s → %q, redirect %d %q", out.Code, out.LongURL, r.Code, r.Header().Get("Location"))
		}
		if strings.ContainsAny(out.LongURL, "\r\n\t ") {
			t.Fatalf("created a link with whitespace: %q", out.LongURL)
		}
	})
}

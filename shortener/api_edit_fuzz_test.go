package shortener

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// FuzzAPIPatch sends any body and If-Match to PATCH /api/links/<code> of a
// real (embedded) store: never a 5xx; every answer JSON; a 200 leaves a
// link that passes create's validation and redirects to exactly its URL; a
// 4xx leaves the link exactly as it was (fields and version).
func FuzzAPIPatch(f *testing.F) {
	for _, seed := range []struct{ body, ifMatch string }{
		{`{}`, ``},
		{`{"long_url":"https://example.org/x?y=1#z"}`, `"1"`},
		{`{"long_url":null}`, ``},
		{`{"long_url":"javascript:alert(1)"}`, `*`},
		{`{"long_url":"https://sho.rt/loop"}`, ``},
		{`{"long_url":"https://example.com/\r\nX: y"}`, ``},
		{`{"title":null,"tags":["a","b"],"notes":"n\nm"}`, `W/"1"`},
		{`{"title":"a\u202eb"}`, ``},
		{`{"tags":["x","x"]}`, ``},
		{`{"tags":"x"}`, ``},
		{`{"expires_at":"2099-01-01T00:00:00Z"}`, `"1", "2"`},
		{`{"expires_at":"2001-01-01T00:00:00Z"}`, ``},
		{`{"expires_at":null}`, `1`},
		{`{"code":"x"}`, ``},
		{`{"title":"a","TITLE":"b"}`, ``},
		{`[]`, ``}, {`null`, ``}, {`{`, ``}, {``, ``}, {`{}{}`, ``},
		{"{\"notes\":\"\xff\"}", ``},
	} {
		f.Add(seed.body, seed.ifMatch)
	}
	s := openFuzzEmbedded(f)
	h := newHandler(f, s, nil)
	code := create(f, h, `{"long_url":"https://example.com/fuzz","title":"t"}`).Code
	f.Fuzz(func(t *testing.T, body, ifMatch string) {
		ctx := context.Background()
		before, err := s.Get(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		var hd []string
		if ifMatch != "" {
			hd = []string{"If-Match", ifMatch}
		}
		a := mergePatch(t, h, code, body, hd...)
		if a.Code >= 500 || (a.Code != http.StatusOK && a.Code/100 != 4) {
			t.Fatalf("PATCH %q (If-Match %q) = %d %s", body, ifMatch, a.Code, a.Body)
		}
		if !json.Valid([]byte(a.Body)) {
			t.Fatalf("PATCH %q: answer %q is not JSON", body, a.Body)
		}
		after, err := s.Get(ctx, code)
		if err != nil {
			t.Fatal(err)
		}
		if a.Code != http.StatusOK {
			if !sameLink(before, after) {
				t.Fatalf("PATCH %q refused with %d changed the link:\n%+v\n→ %+v", body, a.Code, before, after)
			}
			return
		}
		checkValidLink(t, h, body, after)
	})
}

// sameLink compares every stored field and the version.
func sameLink(a, b link.Link) bool {
	return a.Code == b.Code && a.LongURL == b.LongURL && a.CreatedAt.Equal(b.CreatedAt) &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.RevokedAt.Equal(b.RevokedAt) && a.Title == b.Title &&
		slices.Equal(a.Tags, b.Tags) && a.Notes == b.Notes && a.Version == b.Version
}

// checkValidLink: the link as edited passes what create checks, and
// redirects to exactly its URL.
func checkValidLink(t *testing.T, h *Handler, body string, l link.Link) {
	t.Helper()
	if long, err := h.policy.Check(l.LongURL, "sho.rt"); err != nil || long != l.LongURL {
		t.Fatalf("PATCH %q stored a long URL create would refuse or change: %q → %q, %v", body, l.LongURL, long, err)
	}
	if err := link.CheckMetadata(l.Title, l.Tags, l.Notes); err != nil {
		t.Fatalf("PATCH %q stored metadata out of bounds: %v", body, err)
	}
	if !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("PATCH %q stored an expiry in the past: %v", body, l.ExpiresAt)
	}
	if !l.ExpiresAt.IsZero() && !l.ExpiresAt.After(time.Now()) {
		return // expired since: 410 is right
	}
	if w := serve(t, h, "GET", "/"+l.Code, ""); w.Code != http.StatusFound || w.Header().Get("Location") != l.LongURL {
		t.Fatalf("PATCH %q: redirect %d %q, want 302 %q", body, w.Code, w.Header().Get("Location"), l.LongURL)
	}
}

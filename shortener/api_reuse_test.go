package shortener

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// postReuse sends a create and decodes the link answered with 200 or 201.
func postReuse(t *testing.T, h *Handler, body string) (int, link.Response) {
	t.Helper()
	w := serve(t, h, "POST", "/api/links", body, auth()...)
	var l link.Response
	if w.Code == http.StatusOK || w.Code == http.StatusCreated {
		if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
			t.Fatalf("decoding %s: %v", w.Body, err)
		}
	}
	return w.Code, l
}

func TestAPIReuse(t *testing.T) {
	for name, open := range txStores {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, open(t), nil)
			exp := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
			status, first := postReuse(t, h, `{"long_url":"https://example.com/r","reuse":true}`)
			if status != http.StatusCreated {
				t.Fatalf("first reuse create = %d, want 201", status)
			}
			cases := []struct {
				name, body string
				status     int
				same       bool
			}{
				{"same URL", `{"long_url":"https://example.com/r","reuse":true,"title":"other"}`, 200, true},
				{"canonical form", `{"long_url":"HTTPS://EXAMPLE.com/r","reuse":true}`, 200, true},
				{"other expiry", fmt.Sprintf(`{"long_url":"https://example.com/r","reuse":true,"expires_at":%q}`, exp), 201, false},
				{"without reuse", `{"long_url":"https://example.com/r"}`, 201, false},
				{"custom code", `{"long_url":"https://example.com/r","reuse":true,"code":"my-code"}`, 201, false},
			}
			for _, c := range cases {
				status, l := postReuse(t, h, c.body)
				if status != c.status || (l.Code == first.Code) != c.same {
					t.Errorf("%s: %d %s, want %d (same link %v)", c.name, status, l.Code, c.status, c.same)
				}
			}
			// The expiring link is reused by a request with that expiry.
			status, exp1 := postReuse(t, h, fmt.Sprintf(`{"long_url":"https://example.com/r","reuse":true,"expires_at":%q}`, exp))
			if status != http.StatusOK || exp1.Code == first.Code {
				t.Errorf("same expiry: %d %s, want 200 with the expiring link", status, exp1.Code)
			}
			// A custom link is never reused; a revoked one neither.
			status, l := postReuse(t, h, `{"long_url":"https://example.com/c","code":"custom-only"}`)
			if status != 201 {
				t.Fatalf("custom create = %d", status)
			}
			if status, l2 := postReuse(t, h, `{"long_url":"https://example.com/c","reuse":true}`); status != 201 || l2.Code == l.Code {
				t.Errorf("reuse of a custom link's URL = %d %s, want 201 with a new link", status, l2.Code)
			}
			_, rv := postReuse(t, h, `{"long_url":"https://example.com/rv","reuse":true}`)
			if w := serve(t, h, "DELETE", "/api/links/"+rv.Code, "", auth()...); w.Code != http.StatusNoContent {
				t.Fatalf("DELETE = %d", w.Code)
			}
			status, l3 := postReuse(t, h, `{"long_url":"https://example.com/rv","reuse":true}`)
			if status != 201 || l3.Code == rv.Code {
				t.Errorf("after revocation: %d %s, want 201 with a new link", status, l3.Code)
			}
		})
	}
}

// Concurrent reuse requests create one link: 50 over two instances sharing
// PostgreSQL and Redis, and 50 over two handlers sharing the embedded store.
func TestNodesReuseConcurrent(t *testing.T) {
	s, pool, redisURL, prefix := sharedServices(t)
	a, b := twoNodes(t, s.Store, redisURL, prefix, nil)
	testReuseConcurrent(t, a, b)
	if n := countLinks(t, pool); n != 1 {
		t.Errorf("%d links stored, want 1", n)
	}
}

func TestEmbeddedReuseConcurrent(t *testing.T) {
	s := openTestEmbedded(t)
	testReuseConcurrent(t, newHandler(t, s, nil), newHandler(t, s, nil))
}

func testReuseConcurrent(t *testing.T, a, b *Handler) {
	t.Helper()
	ws := concurrentPOSTs(t, []*Handler{a, b}, 50, "http://sho.rt/api/links", `{"long_url":"https://example.com/many","reuse":true}`, auth()...)
	created, code := 0, ""
	for i, w := range ws {
		var l link.Response
		if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil || (w.Code != 200 && w.Code != 201) {
			t.Fatalf("answer #%d = %d %s", i, w.Code, w.Body)
		}
		if w.Code == http.StatusCreated {
			created++
		}
		if code == "" {
			code = l.Code
		}
		if l.Code != code {
			t.Errorf("answer #%d has code %s, want %s", i, l.Code, code)
		}
	}
	if created != 1 {
		t.Errorf("%d answers 201, want 1 (the rest 200)", created)
	}
}

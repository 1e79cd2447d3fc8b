package shortener

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

func errorOf(t testing.TB, body []byte) string {
	t.Helper()
	var e map[string]string
	if err := json.Unmarshal(body, &e); err != nil || e["error"] == "" {
		t.Fatalf("error body %q is not {\"error\": ...}: %v", body, err)
	}
	return e["error"]
}

func TestAPICreateAndGet(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) { h.now = func() time.Time { return now } })

	out := create(t, h, `{"long_url":"https://example.com/x","expires_at":"2026-06-01T00:00:00Z"}`)
	if len(out.Code) != 7 || !link.ValidLookupCode(out.Code) {
		t.Errorf("code %q, want 7 base62 characters", out.Code)
	}
	if out.ShortURL != "http://sho.rt/"+out.Code || out.LongURL != "https://example.com/x" ||
		!out.CreatedAt.Equal(now) || out.ExpiresAt == nil || !out.ExpiresAt.Equal(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("created %+v", out)
	}
	if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound || w.Header().Get("Location") != "https://example.com/x" {
		t.Errorf("redirect after create = %d %q", w.Code, w.Header().Get("Location"))
	}

	w := serve(t, h, "GET", "http://sho.rt/api/links/"+out.Code, "", auth()...)
	var got link.Response
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.LongURL != out.LongURL || got.Code != out.Code {
		t.Errorf("GET link = %d %s", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if w := serve(t, h, "GET", "/api/links/zzzzzzz", "", auth()...); w.Code != http.StatusNotFound {
		t.Errorf("GET unknown link = %d, want 404", w.Code)
	} else {
		errorOf(t, w.Body.Bytes())
	}

	custom := create(t, h, `{"long_url":"https://example.com/c","code":"my-Link_1"}`)
	if custom.Code != "my-Link_1" || custom.ExpiresAt != nil {
		t.Errorf("custom = %+v", custom)
	}
	w = serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/d","code":"my-Link_1"}`, auth()...)
	if w.Code != http.StatusConflict || !strings.Contains(errorOf(t, w.Body.Bytes()), "taken") {
		t.Errorf("taken custom code = %d %s, want 409", w.Code, w.Body)
	}
}

func TestAPIBaseURL(t *testing.T) {
	h := newHandler(t, newMemStore(), func(h *Handler) { h.BaseURL = "https://s.example/go/" })
	out := create(t, h, `{"long_url":"https://example.com/"}`)
	if out.ShortURL != "https://s.example/go/"+out.Code {
		t.Errorf("short_url %q", out.ShortURL)
	}
	w := serve(t, h, "POST", "/api/links", `{"long_url":"https://S.example/go/abc"}`, auth()...)
	if w.Code != http.StatusBadRequest {
		t.Errorf("link to base_url host = %d, want 400", w.Code)
	}
}

func TestAPIErrors(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) { h.DenyHosts = []string{"evil.example"} })
	big := `{"long_url":"https://example.com/` + strings.Repeat("a", maxBody+1) + `"}`
	for _, tc := range []struct {
		name, method, target, body string
		header                     []string
		status                     int
		want                       string
	}{
		{"no key", "POST", "/api/links", `{"long_url":"https://example.com/"}`, nil, 401, "API key"},
		{"wrong key", "POST", "/api/links", `{"long_url":"https://example.com/"}`, []string{"Authorization", "Bearer nope"}, 401, "API key"},
		{"basic auth", "GET", "/api/links/abc", "", []string{"Authorization", "Basic " + testKey}, 401, "API key"},
		{"key prefix", "GET", "/api/links/abc", "", []string{"Authorization", "Bearer " + testKey[:5]}, 401, "API key"},
		{"too large", "POST", "/api/links", big, auth(), 413, "larger"},
		{"bad json", "POST", "/api/links", `{"long_url":`, auth(), 400, "JSON"},
		{"unknown field", "POST", "/api/links", `{"url":"https://example.com/"}`, auth(), 400, "url"},
		{"duplicate field", "POST", "/api/links", `{"long_url":"https://example.com/","long_url":"https://evil.example/"}`, auth(), 400, `"long_url" given twice`},
		{"duplicate field, other case", "POST", "/api/links", `{"long_url":"https://example.com/","Long_URL":"https://evil.example/"}`, auth(), 400, `"Long_URL" given twice`},
		{"trailing data", "POST", "/api/links", `{"long_url":"https://example.com/"}{"long_url":"https://evil.example/"}`, auth(), 400, "after the JSON value"},
		{"missing url", "POST", "/api/links", `{}`, auth(), 400, "long_url"},
		{"javascript", "POST", "/api/links", `{"long_url":"javascript:alert(1)"}`, auth(), 400, "long_url"},
		{"data", "POST", "/api/links", `{"long_url":"data:text/html,hi"}`, auth(), 400, "long_url"},
		{"file", "POST", "/api/links", `{"long_url":"file:///etc/passwd"}`, auth(), 400, "long_url"},
		{"crlf", "POST", "/api/links", `{"long_url":"https://example.com/\r\nX: y"}`, auth(), 400, "long_url"},
		{"long", "POST", "/api/links", `{"long_url":"https://example.com/` + strings.Repeat("a", 2048) + `"}`, auth(), 400, "long_url"},
		{"self", "POST", "/api/links", `{"long_url":"https://sho.rt/abc"}`, auth(), 400, "long_url"},
		{"denied", "POST", "/api/links", `{"long_url":"https://evil.example/"}`, auth(), 400, "long_url"},
		{"bad custom code", "POST", "/api/links", `{"long_url":"https://example.com/","code":"a/b"}`, auth(), 400, "code"},
		{"short custom code", "POST", "/api/links", `{"long_url":"https://example.com/","code":"ab"}`, auth(), 400, "code"},
		{"reserved code", "POST", "/api/links", `{"long_url":"https://example.com/","code":"api"}`, auth(), 400, "reserved"},
		{"bad codes", "POST", "/api/links", `{"long_url":"https://example.com/","codes":"pretty"}`, auth(), 400, "codes"},
		{"bad expiry", "POST", "/api/links", `{"long_url":"https://example.com/","expires_at":"tomorrow"}`, auth(), 400, "expires_at"},
		{"past expiry", "POST", "/api/links", `{"long_url":"https://example.com/","expires_at":"2001-01-01T00:00:00Z"}`, auth(), 400, "expires_at"},
		{"wrong method", "PUT", "/api/links", "", auth(), 405, "PUT"},
		{"wrong method on link", "PUT", "/api/links/abc", "", auth(), 405, "PUT"},
		{"unknown endpoint", "GET", "/api/other", "", auth(), 404, "endpoint"},
		{"api root", "GET", "/api", "", auth(), 404, "endpoint"},
		{"delete unknown", "DELETE", "/api/links/zzzz", "", auth(), 404, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(t, h, tc.method, "http://sho.rt"+tc.target, tc.body, tc.header...)
			if w.Code != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.target, w.Code, w.Body, tc.status)
			}
			if msg := errorOf(t, w.Body.Bytes()); !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to mention %q", msg, tc.want)
			}
		})
	}
	if n := s.len(); n != 0 {
		t.Errorf("%d links stored by refused requests, want 0", n)
	}
}

func TestAPIDelete(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	out := create(t, h, `{"long_url":"https://example.com/"}`)
	if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusFound {
		t.Fatalf("before delete = %d", w.Code)
	}
	if w := serve(t, h, "DELETE", "/api/links/"+out.Code, "", auth()...); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s, want 204", w.Code, w.Body)
	}
	if w := serve(t, h, "GET", "/"+out.Code, ""); w.Code != http.StatusGone {
		t.Errorf("after delete = %d, want 410", w.Code)
	}
	w := serve(t, h, "GET", "/api/links/"+out.Code, "", auth()...)
	var got link.Response
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil || got.RevokedAt == nil {
		t.Errorf("GET revoked = %d %s, want revoked_at", w.Code, w.Body)
	}
	if w := serve(t, h, "DELETE", "/api/links/"+out.Code, "", auth()...); w.Code != http.StatusNoContent {
		t.Errorf("second DELETE = %d, want 204", w.Code)
	}
}

func TestAPICreateDropsNegativeEntry(t *testing.T) {
	h := newHandler(t, newMemStore(), nil)
	if w := serve(t, h, "GET", "/later1", ""); w.Code != http.StatusNotFound {
		t.Fatalf("before = %d", w.Code)
	}
	create(t, h, `{"long_url":"https://example.com/","code":"later1"}`)
	if w := serve(t, h, "GET", "/later1", ""); w.Code != http.StatusFound {
		t.Errorf("right after create = %d, want 302", w.Code)
	}
}

func TestAPIStoreDown(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) { h.Codes = "sequential" })
	s.down.Store(true)
	for _, body := range []string{
		`{"long_url":"https://example.com/"}`,
		`{"long_url":"https://example.com/","codes":"random"}`,
		`{"long_url":"https://example.com/","code":"custom"}`,
	} {
		w := serve(t, h, "POST", "/api/links", body, auth()...)
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("POST %s with store down = %d, want 503", body, w.Code)
			continue
		}
		errorOf(t, w.Body.Bytes())
	}
	for _, m := range []string{"GET", "DELETE"} {
		if w := serve(t, h, m, "/api/links/abcd", "", auth()...); w.Code != http.StatusServiceUnavailable {
			t.Errorf("%s with store down = %d, want 503", m, w.Code)
		}
	}
	s.down.Store(false)
	if n := s.len(); n != 0 {
		t.Errorf("%d links written while the store was down", n)
	}
}

// takenStore says every code is taken for its first taken Create calls.
type takenStore struct {
	*memStore
	mu    sync.Mutex
	taken int
	lens  []int
}

func (s *takenStore) Create(ctx context.Context, l link.Link) error {
	s.mu.Lock()
	s.lens = append(s.lens, len(l.Code))
	if s.taken > 0 {
		s.taken--
		s.mu.Unlock()
		return link.ErrCodeTaken
	}
	s.mu.Unlock()
	return s.memStore.Create(ctx, l)
}

func TestAPIRandomRetries(t *testing.T) {
	s := &takenStore{memStore: newMemStore(), taken: 6}
	h := newHandler(t, s, func(h *Handler) { h.CodeLength = 6 })
	out := create(t, h, `{"long_url":"https://example.com/"}`)
	want := []int{6, 6, 6, 6, 6, 7, 7}
	if len(s.lens) != len(want) {
		t.Fatalf("attempt lengths %v, want %v", s.lens, want)
	}
	for i := range want {
		if s.lens[i] != want[i] {
			t.Fatalf("attempt lengths %v, want %v", s.lens, want)
		}
	}
	if len(out.Code) != 7 {
		t.Errorf("code %q, want length 7 after 5 taken draws", out.Code)
	}
	if got := counterValue(h.metrics.retries); got != 6 {
		t.Errorf("retries metric = %v, want 6", got)
	}
}

func TestAPISequentialBlocks(t *testing.T) {
	c := &countingStore{Store: newMemStore()}
	h := newHandler(t, c, func(h *Handler) { h.Codes = "sequential"; h.BlockSize = 10 })
	var prev int64
	for i := range 25 {
		out := create(t, h, `{"long_url":"https://example.com/"}`)
		id, ok := link.SequentialID(out.Code)
		if !ok || len(out.Code) != 7 {
			t.Fatalf("code %q is not a 7-character sequential code", out.Code)
		}
		if i > 0 && id != prev+1 {
			t.Errorf("id %d after %d, want consecutive", id, prev)
		}
		prev = id
	}
	if n := c.blocks.Load(); n != 3 {
		t.Errorf("NextBlock called %d times for 25 codes in blocks of 10, want 3", n)
	}
	// Per-request override.
	out := create(t, h, `{"long_url":"https://example.com/","codes":"random"}`)
	if _, ok := link.SequentialID(out.Code); ok && out.Code == link.SequentialCode(prev+1) {
		t.Errorf("codes=random gave the next sequential code %q", out.Code)
	}
}

// timeoutStore fails every Create with a deadline, as a stalled database
// does: the INSERT may still commit after the API gave up.
type timeoutStore struct{ *memStore }

func (timeoutStore) Create(ctx context.Context, l link.Link) error {
	return fmt.Errorf("inserting link: %w", context.DeadlineExceeded)
}

func TestAPICreateTimeoutIsAmbiguous(t *testing.T) {
	h := newHandler(t, timeoutStore{newMemStore()}, nil)
	for _, body := range []string{
		`{"long_url":"https://example.com/","code":"custom"}`,
		`{"long_url":"https://example.com/"}`,
		`{"long_url":"https://example.com/","codes":"sequential"}`,
	} {
		w := serve(t, h, "POST", "/api/links", body, auth()...)
		if w.Code != http.StatusServiceUnavailable {
			t.Errorf("POST %s = %d, want 503", body, w.Code)
			continue
		}
		if msg := errorOf(t, w.Body.Bytes()); !strings.Contains(msg, "may have been created") || strings.Contains(msg, "nothing was changed") {
			t.Errorf("POST %s: error %q, want it to say the link may have been created", body, msg)
		}
	}
}

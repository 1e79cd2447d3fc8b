package shortener

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkUICookieSession: what a request with the session cookie costs
// before its endpoint runs: the signature, then one read of the session
// (embedded store).
func BenchmarkUICookieSession(b *testing.B) {
	h := newHandler(b, nil, func(h *Handler) {
		h.UI = "/admin"
		h.Store, h.Path = "embedded", b.TempDir()+"/links.db"
	})
	w := serve(b, h, "POST", "/admin/session", `{"key":"`+testKey+`"}`, "Origin", origin)
	cookie := strings.SplitN(w.Header().Get("Set-Cookie"), ";", 2)[0]
	r := httptest.NewRequest("GET", "http://sho.rt/api/links", nil)
	r.Header.Set("Cookie", cookie)
	rw := httptest.NewRecorder()
	h.now = func() time.Time { return time.Now().Add(-time.Second) } // no refresh: the steady state
	b.ReportAllocs()
	for b.Loop() {
		if s, _, err := h.cookieSession(rw, r); s == nil || err != nil {
			b.Fatal("no session", err)
		}
	}
}

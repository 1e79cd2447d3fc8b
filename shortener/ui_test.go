package shortener

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

const testReadKey = "read-key-0123456789"

// uiClock is a settable clock for session lifetimes.
type uiClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *uiClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *uiClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// uiHandler is a handler with the dashboard at /admin on st, keys
// testKey (write) and testReadKey (read), its clock c.
func uiHandler(t *testing.T, st link.Store, c *uiClock, keys ...string) *Handler {
	t.Helper()
	return newHandler(t, st, func(h *Handler) {
		h.UI, h.APIReadKeys, h.now = "/admin", []string{testReadKey}, c.now
		if keys != nil {
			h.APIKeys = keys
		}
	})
}

func embeddedStore(t *testing.T) *store.EmbeddedStore {
	t.Helper()
	st, err := store.OpenEmbedded(filepath.Join(t.TempDir(), "links.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

const origin = "http://sho.rt"

// signIn signs in with key and returns the cookie and the answer.
func signIn(t *testing.T, h *Handler, key string) (string, sessionAnswer) {
	t.Helper()
	w := serve(t, h, "POST", "/admin/session", `{"key":"`+key+`"}`, "Origin", origin, "Content-Type", "application/json")
	if w.Code != http.StatusOK {
		t.Fatalf("sign in: %d %s", w.Code, w.Body)
	}
	var a sessionAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	return sessionCookie(t, w), a
}

// sessionCookie is the Cookie header value a response set ("" if none).
func sessionCookie(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookiePlain || c.Name == sessionCookieTLS {
			if c.MaxAge < 0 {
				return ""
			}
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

// TestUISessions: a key exchanged for a cookie that is HttpOnly,
// SameSite=Strict, never holds the key; the API accepts the cookie for
// reads, and for writes only with this site's Origin and the CSRF token;
// the history names the key's fingerprint; a read key's session cannot
// write; sign-out clears the cookie.
func TestUISessions(t *testing.T) {
	c := &uiClock{t: time.Now()}
	h := uiHandler(t, embeddedStore(t), c)

	w := serve(t, h, "POST", "/admin/session", `{"key":"`+testKey+`"}`, "Origin", origin)
	raw := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusOK || !strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Strict") ||
		!strings.Contains(raw, "Path=/") || strings.Contains(raw, "Secure") || strings.Contains(raw+w.Body.String(), testKey) {
		t.Fatalf("sign in: %d %s, Set-Cookie %q", w.Code, w.Body, raw)
	}
	var a sessionAnswer
	_ = json.Unmarshal(w.Body.Bytes(), &a)
	if a.Scope != "write" || a.API != "/api" || a.CSRFToken == "" || !a.ExpiresAt.Equal(time.Unix(c.now().Unix(), 0).Add(DefaultUISessionMaxAge)) {
		t.Errorf("session answer %+v", a)
	}
	cookie := sessionCookie(t, w)

	if w := serve(t, h, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusOK {
		t.Errorf("GET links with the cookie: %d %s", w.Code, w.Body)
	}
	body := `{"long_url":"https://example.com/a","code":"dash1"}`
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"no Origin", []string{"Cookie", cookie, csrfHeader, a.CSRFToken}, http.StatusForbidden},
		{"other Origin", []string{"Cookie", cookie, csrfHeader, a.CSRFToken, "Origin", "https://evil.example"}, http.StatusForbidden},
		{"other scheme", []string{"Cookie", cookie, csrfHeader, a.CSRFToken, "Origin", "https://sho.rt"}, http.StatusForbidden},
		{"no token", []string{"Cookie", cookie, "Origin", origin}, http.StatusForbidden},
		{"wrong token", []string{"Cookie", cookie, "Origin", origin, csrfHeader, a.CSRFToken[1:]}, http.StatusForbidden},
		{"tampered cookie", []string{"Cookie", cookie[:len(cookie)-2] + "AA", "Origin", origin, csrfHeader, a.CSRFToken}, http.StatusUnauthorized},
		{"Origin with default port", []string{"Cookie", cookie, "Origin", "http://SHO.RT:80", csrfHeader, a.CSRFToken}, http.StatusCreated},
	} {
		if w := serve(t, h, "POST", "/api/links", body, tc.header...); w.Code != tc.want {
			t.Errorf("%s: POST links %d %s, want %d", tc.name, w.Code, w.Body, tc.want)
		}
	}
	w = serve(t, h, "PATCH", "/api/links/dash1", `{"title":"From the dashboard"}`, "Cookie", cookie, "Origin", origin,
		csrfHeader, a.CSRFToken, "Content-Type", "application/merge-patch+json")
	if w.Code != http.StatusOK {
		t.Fatalf("PATCH with the cookie: %d %s", w.Code, w.Body)
	}
	d := sha256.Sum256([]byte(testKey))
	if w := serve(t, h, "GET", "/api/links/dash1/history", "", "Cookie", cookie); !strings.Contains(w.Body.String(), `"key":"`+hex.EncodeToString(d[:8])+`"`) {
		t.Errorf("history does not name the key's fingerprint: %s", w.Body)
	}

	rc, ra := signIn(t, h, testReadKey)
	if ra.Scope != "read" {
		t.Errorf("read key session scope %q", ra.Scope)
	}
	if w := serve(t, h, "GET", "/api/links/dash1", "", "Cookie", rc); w.Code != http.StatusOK {
		t.Errorf("read session GET: %d", w.Code)
	}
	if w := serve(t, h, "DELETE", "/api/links/dash1", "", "Cookie", rc, "Origin", origin, csrfHeader, ra.CSRFToken); w.Code != http.StatusForbidden {
		t.Errorf("read session DELETE: %d %s, want 403", w.Code, w.Body)
	}
	if w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/","code":"admin"}`, auth()...); w.Code != http.StatusBadRequest {
		t.Errorf("code 'admin' (the ui's segment): %d, want 400", w.Code)
	}

	w = serve(t, h, "DELETE", "/admin/session", "", "Cookie", cookie, "Origin", origin)
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign out: %d, Set-Cookie %q", w.Code, w.Header().Get("Set-Cookie"))
	}
	if w := serve(t, h, "GET", "/admin/session", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("GET session without a cookie: %d, want 401", w.Code)
	}
}

// TestUISignInRefusals: a wrong key 401, another origin 403, bad bodies
// 400 naming the problem; attempts are limited per client.
func TestUISignInRefusals(t *testing.T) {
	h := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	for _, tc := range []struct {
		body, origin string
		want         int
		msg          string
	}{
		{`{"key":"wrong-key-0123456789"}`, origin, http.StatusUnauthorized, "invalid API key"},
		{`{"key":"` + testKey + `"}`, "https://evil.example", http.StatusForbidden, "Origin"},
		{`{"key":"` + testKey + `"}`, "", http.StatusForbidden, "Origin"},
		{`{"key":"` + testKey + `"}`, "null", http.StatusForbidden, "Origin"},
		{`{"key":""}`, origin, http.StatusBadRequest, "key is required"},
		{`{"key":1}`, origin, http.StatusBadRequest, "invalid JSON"},
		{`{"key":"` + testKey + `","extra":1}`, origin, http.StatusBadRequest, "invalid JSON"},
		{`{"key":"` + strings.Repeat("k", 2000) + `"}`, origin, http.StatusRequestEntityTooLarge, "body larger"},
	} {
		w := serve(t, h, "POST", "/admin/session", tc.body, "Origin", tc.origin)
		if w.Code != tc.want || !strings.Contains(w.Body.String(), tc.msg) || w.Header().Get("Set-Cookie") != "" {
			t.Errorf("sign in %.40s from %q: %d %s, want %d %q and no cookie", tc.body, tc.origin, w.Code, w.Body, tc.want, tc.msg)
		}
	}

	h2 := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	attempt := func(addr string) int {
		r := httptest.NewRequest("POST", "http://sho.rt/admin/session", strings.NewReader(`{"key":"wrong-key-0123456789"}`))
		r.Header.Set("Origin", origin)
		r.RemoteAddr = addr + ":4000"
		w := httptest.NewRecorder()
		_ = h2.ServeHTTP(w, r, nextHandler)
		return w.Code
	}
	var refused int
	for range 15 {
		if attempt("192.0.2.7") == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 15-signinPerClient {
		t.Errorf("15 attempts from one address: %d refused, want %d", refused, 15-signinPerClient)
	}
	if got := attempt("192.0.2.8"); got != http.StatusUnauthorized {
		t.Errorf("another address: %d, want 401 (its own limit)", got)
	}
	if got := attempt("2001:db8::1"); got != http.StatusUnauthorized {
		t.Errorf("an IPv6 client: %d, want 401", got)
	}
	for range signinPerClient {
		attempt("2001:db8::2")
	}
	if got := attempt("2001:db8::3"); got != http.StatusTooManyRequests {
		t.Errorf("another address of the same /64 after its budget: %d, want 429", got)
	}
}

// TestUISessionLifetimes: a session ends after its idle limit without
// use, is re-issued while used, and ends at its maximum age however used.
func TestUISessionLifetimes(t *testing.T) {
	c := &uiClock{t: time.Now()}
	h := uiHandler(t, embeddedStore(t), c)
	get := func(cookie string) *httptest.ResponseRecorder {
		return serve(t, h, "GET", "/api/links", "", "Cookie", cookie)
	}
	cookie, _ := signIn(t, h, testKey)
	for elapsed := time.Duration(0); elapsed < DefaultUISessionMaxAge-DefaultUISessionIdle; elapsed += DefaultUISessionIdle - time.Minute {
		c.add(DefaultUISessionIdle - time.Minute)
		w := get(cookie)
		if w.Code != http.StatusOK {
			t.Fatalf("used every %s, at %s: %d, want 200", DefaultUISessionIdle-time.Minute, elapsed, w.Code)
		}
		if next := sessionCookie(t, w); next != "" {
			cookie = next
		} else {
			t.Fatalf("a use after %s did not re-issue the cookie", DefaultUISessionIdle-time.Minute)
		}
	}
	c.add(DefaultUISessionIdle)
	if w := get(cookie); w.Code != http.StatusUnauthorized {
		t.Errorf("past the maximum age: %d, want 401", w.Code)
	}
	cookie, _ = signIn(t, h, testKey)
	c.add(DefaultUISessionIdle + time.Second)
	if w := get(cookie); w.Code != http.StatusUnauthorized {
		t.Errorf("idle past the limit: %d, want 401", w.Code)
	}
}

// TestUISessionsAcrossInstances: instances on one store that share the
// ui secret accept each other's sessions; an instance with a secret of
// its own (its data directory's) does not, nor does one without the key.
func TestUISessionsAcrossInstances(t *testing.T) {
	st, _ := openPostgresOwn(t, testenv.Postgres(t), pgpool.Settings{})
	c := &uiClock{t: time.Now()}
	a, b := uiHandlerWith(t, st, c, withSecret(testUISecret, "")), uiHandlerWith(t, st, c, withSecret(testUISecret, ""))
	cookie, tok := signIn(t, a, testKey)
	w := serve(t, b, "POST", "/api/links", `{"long_url":"https://example.com/b"}`, "Cookie", cookie, "Origin", origin, csrfHeader, tok.CSRFToken)
	if w.Code != http.StatusCreated {
		t.Errorf("the other instance: %d %s, want 201", w.Code, w.Body)
	}
	if w := serve(t, uiHandler(t, st, c), "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusUnauthorized {
		t.Errorf("an instance with another secret: %d, want 401", w.Code)
	}
	without := uiHandlerWith(t, st, c, withSecret(testUISecret, ""), func(h *Handler) { h.APIKeys = []string{"another-key-0123456789"} })
	if w := serve(t, without, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusUnauthorized {
		t.Errorf("an instance without the key: %d, want 401 (removing a key ends its sessions)", w.Code)
	}
}

// TestUIAssets: the page and its files, gzipped, revalidated by ETag,
// with a strict CSP; the bare mount redirects to its slash.
func TestUIAssets(t *testing.T) {
	h := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	if w := serve(t, h, "GET", "/admin", ""); w.Code != http.StatusPermanentRedirect || w.Header().Get("Location") != "/admin/" {
		t.Errorf("GET /admin: %d %q", w.Code, w.Header().Get("Location"))
	}
	var total int
	for _, p := range []string{"/admin/", "/admin/assets/app.js", "/admin/assets/app.css"} {
		w := serve(t, h, "GET", p, "", "Accept-Encoding", "gzip, br")
		hd := w.Header()
		if w.Code != http.StatusOK || hd.Get("Content-Encoding") != "gzip" || !strings.Contains(hd.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			!strings.Contains(hd.Get("Content-Security-Policy"), "script-src 'self'") || hd.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, headers %v", p, w.Code, hd)
		}
		total += w.Body.Len()
		if w2 := serve(t, h, "GET", p, "", "If-None-Match", hd.Get("ETag")); w2.Code != http.StatusNotModified {
			t.Errorf("GET %s If-None-Match: %d, want 304", p, w2.Code)
		}
	}
	for _, p := range []string{"/admin/nope", "/admin/index.html", "/admin/assets/../ui.go"} {
		if w := serve(t, h, "GET", p, ""); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, w.Code)
		}
	}
	if w := serve(t, h, "POST", "/admin/", "x"); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /admin/: %d, want 405", w.Code)
	}
	if w := serve(t, h, "GET", "/admin/", "", "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got gzip")
	}
	// The first load fetches every file (index.html, then its modules).
	var all int
	for name := range uiAssets {
		p := "/admin" + name
		w := serve(t, h, "GET", p, "", "Accept-Encoding", "gzip")
		if w.Code != http.StatusOK {
			t.Errorf("GET %s: %d", p, w.Code)
		}
		all += w.Body.Len()
	}
	if all > 150<<10 {
		t.Errorf("first load transfers %d bytes compressed, over the 150 KiB budget", all)
	}
	t.Logf("first load: %d bytes gzipped in %d files (page and style sheet: %d)", all, len(uiAssets), total)
}

// TestUISecureCookie: over HTTPS the cookie is __Host- and Secure.
func TestUISecureCookie(t *testing.T) {
	h := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	r := httptest.NewRequest("POST", "https://sho.rt/admin/session", strings.NewReader(`{"key":"`+testKey+`"}`))
	r.TLS = &tls.ConnectionState{}
	r.Header.Set("Origin", "https://sho.rt")
	w := httptest.NewRecorder()
	_ = h.ServeHTTP(w, r, nextHandler)
	if c := w.Header().Get("Set-Cookie"); w.Code != http.StatusOK || !strings.HasPrefix(c, sessionCookieTLS+"=") || !strings.Contains(c, "Secure") {
		t.Errorf("HTTPS sign in: %d, Set-Cookie %q", w.Code, c)
	}
}

// TestUIOnConfiguredStores: the dashboard signs in on the stores as a
// config opens them (the embedded file shared across reloads, PostgreSQL
// from its dsn), not only on a store handed to the handler.
func TestUIOnConfiguredStores(t *testing.T) {
	for name, configure := range map[string]func(h *Handler){
		"embedded": func(h *Handler) { h.Store, h.Path = "embedded", filepath.Join(t.TempDir(), "links.db") },
		"postgres": func(h *Handler) { h.Store, h.DSN = "postgres", testenv.Postgres(t) },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHandler(t, nil, func(h *Handler) { configure(h); h.UI = "/admin" })
			cookie, a := signIn(t, h, testKey)
			w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/c"}`, "Cookie", cookie, "Origin", origin, csrfHeader, a.CSRFToken)
			if w.Code != http.StatusCreated {
				t.Errorf("create with the session: %d %s", w.Code, w.Body)
			}
		})
	}
}

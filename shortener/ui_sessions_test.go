package shortener

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/pgpool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
	"github.com/edgekit/caddy-edgekit/shortener/store"
)

const (
	testUISecret  = "ui-secret-0123456789abcdefghijklmnop"
	testUISecret2 = "ui-secret-2-0123456789abcdefghijklmn"
)

// withSecret configures the dashboard's signing secrets.
func withSecret(secret, previous string) func(*Handler) {
	return func(h *Handler) { h.UISecret, h.UIPreviousSecret = secret, previous }
}

// uiHandlerWith is uiHandler with more settings.
func uiHandlerWith(t *testing.T, st link.Store, c *uiClock, configure ...func(*Handler)) *Handler {
	t.Helper()
	return newHandler(t, st, func(h *Handler) {
		h.UI, h.APIReadKeys, h.now = "/admin", []string{testReadKey}, c.now
		for _, f := range configure {
			f(h)
		}
	})
}

// forgeCandidates tries every value as a signing secret and as a cookie
// key, for every session ID, against h: each forged cookie must be refused.
func forgeCandidates(t *testing.T, h *Handler, candidates [][]byte, ids [][store.SessionIDLen]byte) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("the copy holds no session")
	}
	tried := 0
	for _, c := range candidates {
		keys := []signingKey{deriveKey(c)}
		if len(c) >= 32 {
			var raw signingKey
			copy(raw.cookie[:], c)
			keys = append(keys, raw)
		}
		for _, k := range keys {
			for _, id := range ids {
				tried++
				if w := serve(t, h, "GET", "/api/links", "", "Cookie", sessionCookiePlain+"="+encodeCookie(&k, id)); w.Code != http.StatusUnauthorized {
					t.Fatalf("a cookie signed with %d bytes from a copy of the store: %d, want 401", len(c), w.Code)
				}
			}
		}
	}
	// The forging is right: the real key makes a cookie that works.
	if w := serve(t, h, "GET", "/api/links", "", "Cookie", sessionCookiePlain+"="+encodeCookie(&h.ui.keys.current, ids[0])); w.Code != http.StatusOK {
		t.Fatalf("the real key's cookie: %d, want 200", w.Code)
	}
	t.Logf("%d forged cookies refused", tried)
}

// TestUISessionStoreCopyCannotSign: everything a copy of the store holds
// (every key and value of the embedded file; every column of every row a
// read role sees in PostgreSQL), tried as the signing secret or the key
// itself, signs no cookie the dashboard accepts for the sessions it holds.
func TestUISessionStoreCopyCannotSign(t *testing.T) {
	t.Run("embedded backup", func(t *testing.T) {
		st := embeddedStore(t)
		h := uiHandler(t, st, &uiClock{t: time.Now()})
		signIn(t, h, testKey)
		var buf bytes.Buffer
		if err := st.Db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(&buf); return err }); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "copy.db")
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		cp, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer cp.Close()
		var values [][]byte
		var ids [][store.SessionIDLen]byte
		_ = cp.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				return b.ForEach(func(k, v []byte) error {
					values = append(values, bytes.Clone(k), bytes.Clone(v))
					if bytes.Equal(name, store.EmbeddedSessions) {
						ids = append(ids, [store.SessionIDLen]byte(k))
					}
					return nil
				})
			})
		})
		forgeCandidates(t, h, values, ids)
	})
	t.Run("postgres read role", func(t *testing.T) {
		st, pool := openPostgresOwn(t, testenv.Postgres(t), pgpool.Settings{})
		h := uiHandler(t, st, &uiClock{t: time.Now()})
		signIn(t, h, testKey)
		ctx := context.Background()
		rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
		if err != nil {
			t.Fatal(err)
		}
		var tables []string
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			tables = append(tables, n)
		}
		var values [][]byte
		for _, table := range tables {
			// Every column of every row, bytea as \x hex.
			rows, err := pool.Query(ctx, `SELECT (jsonb_each_text(to_jsonb(t))).value FROM `+table+` t`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var v *string
				_ = rows.Scan(&v)
				if v == nil {
					continue
				}
				values = append(values, []byte(*v))
				if b, err := hex.DecodeString(strings.TrimPrefix(*v, `\x`)); err == nil {
					values = append(values, b)
				}
			}
		}
		var ids [][store.SessionIDLen]byte
		list, err := st.ListSessions(ctx, "", time.Now(), 10)
		for _, s := range list {
			ids = append(ids, s.ID)
		}
		if err != nil || len(tables) < 10 {
			t.Fatalf("%d tables, %v", len(tables), err)
		}
		forgeCandidates(t, h, values, ids)
	})
}

// TestUISignOutRevokesCopiedCookie: signing out on one instance ends the
// session on every instance on the store: a copy of the cookie taken
// before answers 401 there and here, on the API and the session endpoint.
func TestUISignOutRevokesCopiedCookie(t *testing.T) {
	st, _ := openPostgresOwn(t, testenv.Postgres(t), pgpool.Settings{})
	c := &uiClock{t: time.Now()}
	a := uiHandlerWith(t, st, c, withSecret(testUISecret, ""))
	b := uiHandlerWith(t, st, c, withSecret(testUISecret, ""))
	cookie, _ := signIn(t, a, testKey)
	other, _ := signIn(t, a, testKey)
	if w := serve(t, b, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusOK {
		t.Fatalf("the other instance before sign-out: %d, want 200", w.Code)
	}
	if w := serve(t, b, "DELETE", "/admin/session", "", "Cookie", cookie, "Origin", origin); w.Code != http.StatusNoContent {
		t.Fatalf("sign out: %d %s", w.Code, w.Body)
	}
	for name, h := range map[string]*Handler{"the instance signed out on": b, "the instance signed in on": a} {
		if w := serve(t, h, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusUnauthorized {
			t.Errorf("%s, the copied cookie after sign-out: %d, want 401", name, w.Code)
		}
		if w := serve(t, h, "GET", "/admin/session", "", "Cookie", cookie); w.Code != http.StatusUnauthorized {
			t.Errorf("%s, GET session with the copied cookie: %d, want 401", name, w.Code)
		}
	}
	if w := serve(t, a, "GET", "/api/links", "", "Cookie", other); w.Code != http.StatusOK {
		t.Errorf("another session of the same key: %d, want 200 (signing out ends one session)", w.Code)
	}
}

// TestUISignInLimiterCorrectKeyNotLockedOut: a flood of wrong keys from
// 400 clients at once spends the limit of all clients' failures; the
// right key from a fresh client still signs in, while a client that spent
// its own limit is refused even with the right key.
func TestUISignInLimiterCorrectKeyNotLockedOut(t *testing.T) {
	h := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	attempt := func(addr, key string) int {
		r := httptest.NewRequest("POST", "http://sho.rt/admin/session", strings.NewReader(`{"key":"`+key+`"}`))
		r.Header.Set("Origin", origin)
		r.RemoteAddr = addr + ":4000"
		w := httptest.NewRecorder()
		_ = h.ServeHTTP(w, r, nextHandler)
		return w.Code
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 400 {
		wg.Go(func() {
			for range 3 {
				code := attempt(fmt.Sprintf("10.9.%d.%d", i/250, i%250+1), "wrong-key-0123456789")
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// Each client tried 3 times, within its own burst of 10: a 429 is a
	// burst spent because all clients' failures went over their rate.
	if codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != 1200 || codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("the flood's answers: %v, want 1200 401s and 429s, some 429s", codes)
	}
	var ok sync.WaitGroup
	for i := range 20 {
		ok.Go(func() {
			if got := attempt(fmt.Sprintf("192.0.2.%d", 100+i), testKey); got != http.StatusOK {
				t.Errorf("the right key from a fresh client after the flood: %d, want 200", got)
			}
		})
	}
	ok.Wait()
	for range signinPerClient {
		attempt("198.51.100.9", "wrong-key-0123456789")
	}
	if got := attempt("198.51.100.9", testKey); got != http.StatusTooManyRequests {
		t.Errorf("the right key from a client past its own limit: %d, want 429", got)
	}
}

// TestUISessionCookiePath: the session cookie is set on the dashboard's
// path and the API's, never Path=/, over HTTP and HTTPS (there __Secure-
// and Secure); signing out clears both.
func TestUISessionCookiePath(t *testing.T) {
	h := uiHandler(t, embeddedStore(t), &uiClock{t: time.Now()})
	for _, secure := range []bool{false, true} {
		req := func(method, body string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
			r := httptest.NewRequest(method, "http://sho.rt/admin/session", strings.NewReader(body))
			r.Header.Set("Origin", origin)
			if secure {
				r.TLS = &tls.ConnectionState{}
				r.Header.Set("Origin", "https://sho.rt")
			}
			for _, c := range cookies {
				r.AddCookie(c)
			}
			w := httptest.NewRecorder()
			_ = h.ServeHTTP(w, r, nextHandler)
			return w
		}
		w := req("POST", `{"key":"`+testKey+`"}`)
		var got []string
		cookies := w.Result().Cookies()
		for _, c := range cookies {
			got = append(got, fmt.Sprintf("%s %s secure=%t", c.Name, c.Path, c.Secure))
		}
		name := map[bool]string{false: sessionCookiePlain, true: sessionCookieTLS}[secure]
		want := fmt.Sprintf("%s /admin secure=%t; %[1]s /api secure=%[2]t", name, secure)
		if strings.Join(got, "; ") != want {
			t.Errorf("sign in (https %t): cookies %q, want %q", secure, got, want)
		}
		w = req("DELETE", "", cookies[0])
		got = got[:0]
		for _, c := range w.Result().Cookies() {
			got = append(got, fmt.Sprintf("%s %s %d", c.Name, c.Path, c.MaxAge))
		}
		if want := fmt.Sprintf("%s /admin -1; %[1]s /api -1", name); strings.Join(got, "; ") != want {
			t.Errorf("sign out (https %t): cookies %q, want %q", secure, got, want)
		}
	}
}

// TestUISecretRotation: after a rotation (secret new, previous_secret
// old) a session begun under the old secret goes on, its cookie re-issued
// under the new one and its CSRF token unchanged; the old secret signs no
// cookie for a session begun under the new one; once the previous secret
// is removed only re-issued cookies work; a session lasts no longer than
// session_max_age whatever signed it.
func TestUISecretRotation(t *testing.T) {
	st := embeddedStore(t)
	c := &uiClock{t: time.Now()}
	old := uiHandlerWith(t, st, c, withSecret(testUISecret, ""))
	cookie, tok := signIn(t, old, testKey)
	rotated := uiHandlerWith(t, st, c, withSecret(testUISecret2, testUISecret))
	w := serve(t, rotated, "POST", "/api/links", `{"long_url":"https://example.com/r"}`, "Cookie", cookie, "Origin", origin, csrfHeader, tok.CSRFToken)
	reissued := sessionCookie(t, w)
	if w.Code != http.StatusCreated || reissued == "" || reissued == cookie {
		t.Fatalf("the old secret's cookie after the rotation: %d %s, re-issued %q", w.Code, w.Body, reissued)
	}
	fresh, _ := signIn(t, rotated, testKey)
	id, k, ok := decodeCookie(rotated.ui.keys.all(), strings.TrimPrefix(fresh, sessionCookiePlain+"="))
	if !ok || k != 0 {
		t.Fatalf("a new session's cookie is not signed with the new secret (key %d, %t)", k, ok)
	}
	forged := sessionCookiePlain + "=" + encodeCookie(new(deriveKey([]byte(testUISecret))), id)
	if w := serve(t, rotated, "GET", "/api/links", "", "Cookie", forged); w.Code != http.StatusUnauthorized {
		t.Errorf("a new session's cookie signed with the previous secret: %d, want 401", w.Code)
	}
	after := uiHandlerWith(t, st, c, withSecret(testUISecret2, ""))
	for _, tc := range []struct {
		name, cookie string
		want         int
	}{{"re-issued", reissued, http.StatusOK}, {"new", fresh, http.StatusOK}, {"old", cookie, http.StatusUnauthorized}} {
		if w := serve(t, after, "GET", "/api/links", "", "Cookie", tc.cookie); w.Code != tc.want {
			t.Errorf("previous secret removed, the %s cookie: %d, want %d", tc.name, w.Code, tc.want)
		}
	}
	c.add(DefaultUISessionMaxAge + time.Second)
	if w := serve(t, rotated, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusUnauthorized {
		t.Errorf("the old secret's cookie past session_max_age: %d, want 401", w.Code)
	}
}

// TestUISecretSources: the secret from a placeholder or a file, judged
// once expanded; with neither, one generated in the data directory (0600)
// that a second instance there reuses.
func TestUISecretSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(testUISecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_UI_SECRET", testUISecret)
	t.Setenv("TEST_UI_SHORT", "short")
	c := &uiClock{t: time.Now()}
	st := embeddedStore(t)
	fromEnv := uiHandlerWith(t, st, c, withSecret("{env.TEST_UI_SECRET}", ""))
	fromFile := uiHandlerWith(t, st, c, func(h *Handler) { h.UISecretFile = file })
	cookie, _ := signIn(t, fromEnv, testKey)
	if w := serve(t, fromFile, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusOK {
		t.Errorf("the same secret from a file: %d, want 200", w.Code)
	}
	data := t.TempDir()
	gen := uiHandlerWith(t, st, c, func(h *Handler) { h.dataDir = data })
	again := uiHandlerWith(t, st, c, func(h *Handler) { h.dataDir = data })
	cookie, _ = signIn(t, gen, testKey)
	if w := serve(t, again, "GET", "/api/links", "", "Cookie", cookie); w.Code != http.StatusOK {
		t.Errorf("a second instance on the data directory: %d, want 200", w.Code)
	}
	if fi, err := os.Stat(filepath.Join(data, uiSecretFile)); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != MinUISecretLen {
		t.Errorf("the generated secret: %v, %v", fi, err)
	}
	for _, tc := range []struct {
		set  func(*Handler)
		want string
	}{
		{withSecret("{env.TEST_UI_SHORT}", ""), "ui_secret is 5 bytes long; at least 32 are required"},
		{withSecret("{env.TEST_UI_UNSET}", ""), "ui_secret is 0 bytes long"},
		{withSecret(testUISecret, "{env.TEST_UI_SECRET}"), "ui_previous_secret is the current secret"},
		{func(h *Handler) { h.UISecretFile = filepath.Join(dir, "none") }, "ui_secret_file: open"},
	} {
		h := &Handler{API: "/api", APIKeys: []string{testKey}, UI: "/admin", dataDir: data}
		tc.set(h)
		h.store = st
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		err := h.Provision(ctx)
		_ = h.Cleanup()
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), testUISecret) {
			t.Errorf("Provision: %v, want %q (and no secret)", err, tc.want)
		}
	}
}

// adminCall runs one request through the admin API's handler.
func adminCall(t *testing.T, method, target string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	err := serveSessionsAdmin(w, httptest.NewRequest(method, "http://localhost:2019"+target, nil))
	if err != nil {
		var ae caddy.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		return ae.HTTPStatus, ae.Err.Error()
	}
	return w.Code, w.Body.String()
}

// TestUISessionsAdmin: Caddy's admin API lists the live sessions per
// store (two handlers on one store once), by key; ends one (its cookie
// answers 401 at once) or every session of a key; refuses bad input.
func TestUISessionsAdmin(t *testing.T) {
	st := embeddedStore(t)
	c := &uiClock{t: time.Now()}
	a := uiHandlerWith(t, st, c, withSecret(testUISecret, ""))
	b := uiHandlerWith(t, st, c, withSecret(testUISecret, ""), func(h *Handler) { h.UI = "/dash" })
	w1, _ := signIn(t, a, testKey)
	signIn(t, a, testKey)
	r1, _ := signIn(t, a, testReadKey)
	var listing []sessionsListing
	code, body := adminCall(t, "GET", "/shortener/sessions")
	if err := json.Unmarshal([]byte(body), &listing); code != http.StatusOK || err != nil {
		t.Fatalf("GET sessions: %d %s", code, body)
	}
	var mine *sessionsListing
	for i := range listing {
		if len(listing[i].Handlers) == 2 && listing[i].Handlers[0].UI == "/admin" && listing[i].Handlers[1].UI == "/dash" {
			mine = &listing[i]
		}
	}
	if mine == nil || len(mine.Sessions) != 3 {
		t.Fatalf("the store of both handlers: %s", body)
	}
	wfp, rfp := keyDigest(testKey), keyDigest(testReadKey)
	wkey, rkey := hex.EncodeToString(wfp[:8]), hex.EncodeToString(rfp[:8])
	_, body = adminCall(t, "GET", "/shortener/sessions?key="+rkey)
	if !strings.Contains(body, `"scope":"read"`) || strings.Contains(body, wkey) {
		t.Errorf("GET sessions?key=<read key>: %s", body)
	}
	rid, _, _ := decodeCookie(a.ui.keys.all(), strings.TrimPrefix(r1, sessionCookiePlain+"="))
	if code, body := adminCall(t, "DELETE", "/shortener/sessions/"+hex.EncodeToString(rid[:])); code != http.StatusNoContent {
		t.Errorf("DELETE a session: %d %s", code, body)
	}
	if w := serve(t, b, "GET", "/api/links", "", "Cookie", r1); w.Code != http.StatusUnauthorized {
		t.Errorf("the ended session's cookie: %d, want 401", w.Code)
	}
	if code, body := adminCall(t, "DELETE", "/shortener/sessions?key="+wkey); code != http.StatusOK || body != "{\"ended\":2}\n" {
		t.Errorf("DELETE a key's sessions: %d %s", code, body)
	}
	if w := serve(t, a, "GET", "/api/links", "", "Cookie", w1); w.Code != http.StatusUnauthorized {
		t.Errorf("a cookie of the ended key's sessions: %d, want 401", w.Code)
	}
	for _, tc := range []struct {
		method, target string
		want           int
	}{
		{"DELETE", "/shortener/sessions/" + hex.EncodeToString(rid[:]), http.StatusNotFound},
		{"DELETE", "/shortener/sessions/xyz", http.StatusBadRequest},
		{"DELETE", "/shortener/sessions/" + strings.ToUpper(hex.EncodeToString(rid[:])), http.StatusBadRequest},
		{"DELETE", "/shortener/sessions", http.StatusBadRequest},
		{"GET", "/shortener/sessions?key=abc", http.StatusBadRequest},
		{"POST", "/shortener/sessions", http.StatusMethodNotAllowed},
		{"GET", "/shortener/sessions/" + hex.EncodeToString(rid[:]), http.StatusMethodNotAllowed},
		{"GET", "/shortener/other", http.StatusNotFound},
		{"GET", "/shortener/sessionsx", http.StatusNotFound},
	} {
		if code, body := adminCall(t, tc.method, tc.target); code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.target, code, body, tc.want)
		}
	}
}

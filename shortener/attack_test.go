package shortener

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// observe replaces h's logger with an observer of every level.
func observe(h *Handler) *observer.ObservedLogs {
	core, logs := observer.New(zapcore.DebugLevel)
	h.logger = zap.New(core)
	return logs
}

// noCRLF fails if any response header carries a line break (a header
// injection) or the body a raw one (JSON escapes them).
func noCRLF(t *testing.T, what string, w *httptest.ResponseRecorder) {
	t.Helper()
	for name, vals := range w.Header() {
		for _, v := range vals {
			if strings.ContainsAny(v, "\r\n") {
				t.Errorf("%s: header %s = %q carries a line break", what, name, v)
			}
		}
	}
	if strings.ContainsAny(strings.TrimSuffix(w.Body.String(), "\n"), "\r\n") {
		t.Errorf("%s: body %q echoes a raw line break", what, w.Body)
	}
}

// The API compares keys in constant time: near misses of the right key are
// all refused, and the comparison is subtle.ConstantTimeCompare over
// digests (checked in the source, since timing cannot be asserted).
func TestAttackAPIKeys(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) { h.APIKeys = []string{testKey, "second-key-abcdef"} })
	logs := observe(h)
	near := []string{
		"", " ", testKey[:len(testKey)-1], testKey + "0", testKey + " x", strings.ToUpper(testKey),
		"X" + testKey[1:], testKey[:5], "second-key-abcdeF", testKey + "\x00", "\x00" + testKey,
		testKey + "second-key-abcdef", strings.Repeat("a", 100000),
	}
	for _, k := range near {
		for _, auth := range []string{"Bearer " + k, "bearer  " + k + "x", "Basic " + testKey, "Token " + testKey, testKey} {
			w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/"}`, "Authorization", auth)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("Authorization %.40q: %d, want 401", auth, w.Code)
			}
		}
	}
	if s.len() != 0 {
		t.Errorf("%d links created with wrong keys", s.len())
	}
	// The right keys work; a failed store call is logged without them.
	create(t, h, `{"long_url":"https://example.com/ok"}`)
	w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/ok2"}`, "Authorization", "Bearer second-key-abcdef")
	if w.Code != http.StatusCreated {
		t.Errorf("second key: %d, want 201", w.Code)
	}
	s.down.Store(true)
	serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/down"}`, auth()...)
	serve(t, h, "GET", "/api/links/abcdefg", "", auth()...)
	for _, e := range logs.All() {
		text := e.Message + " " + e.Caller.String() + " " + e.Stack
		for k, v := range e.ContextMap() {
			text += " " + k + "=" + strings.ReplaceAll(strings.ReplaceAll(toString(v), "\n", " "), "\t", " ")
		}
		if strings.Contains(text, testKey) || strings.Contains(text, "second-key-abcdef") {
			t.Errorf("log %q contains an API key", e.Message)
		}
	}
	if logs.Len() == 0 {
		t.Errorf("no log of the store failure: the check above saw nothing")
	}

	// The comparison in the source (apiauth.go decides who may call the API).
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "apiauth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var constantTime, plainCompare bool
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "scopeOfDigest" { // keyScope's and sign-in's comparison
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "subtle" && n.Sel.Name == "ConstantTimeCompare" {
					constantTime = true
				}
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					for _, side := range []ast.Expr{n.X, n.Y} {
						ast.Inspect(side, func(m ast.Node) bool {
							if id, ok := m.(*ast.Ident); ok && id.Name == "apiKeys" {
								plainCompare = true
							}
							return true
						})
					}
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Equal" || sel.Sel.Name == "EqualFold") {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "bytes" {
						plainCompare = true
					}
				}
			}
			return true
		})
		return false
	})
	if !constantTime || plainCompare {
		t.Errorf("scopeOfDigest in apiauth.go: subtle.ConstantTimeCompare %v, bytes.Equal or == on apiKeys %v; want keys compared in constant time only",
			constantTime, plainCompare)
	}
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case error:
		return v.Error()
	}
	return ""
}

// endless is a body that never ends; it counts what was read of it.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += len(p)
	return len(p), nil
}

// Bodies over maxBody (96 KiB) are refused with 413 before any parsing, with or
// without a Content-Length, and an endless body is not read to its end.
func TestAttackBodyLimit(t *testing.T) {
	s := &countingStore{Store: newMemStore()}
	h := newHandler(t, s, nil)
	valid := `{"long_url":"https://example.com/` + strings.Repeat("a", maxBody) + `"}`
	invalid := strings.Repeat("{", maxBody+1)
	for name, body := range map[string]func() io.Reader{
		"valid JSON over the limit":   func() io.Reader { return strings.NewReader(valid) },
		"invalid JSON over the limit": func() io.Reader { return strings.NewReader(invalid) },
		"no Content-Length":           func() io.Reader { return io.MultiReader(strings.NewReader(invalid)) },
		"one byte over, valid until then": func() io.Reader {
			return strings.NewReader(`{"long_url":"https://e.com/"}` + strings.Repeat(" ", maxBody))
		},
	} {
		r := httptest.NewRequest("POST", "http://sho.rt/api/links", body())
		r.Header.Set("Authorization", "Bearer "+testKey)
		w := serveRequest(t, h, r)
		if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), `"error"`) {
			t.Errorf("%s: %d %s, want 413 with a JSON error", name, w.Code, w.Body)
		}
	}
	e := new(endless)
	r := httptest.NewRequest("POST", "http://sho.rt/api/links", e)
	r.Header.Set("Authorization", "Bearer "+testKey)
	if w := serveRequest(t, h, r); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("endless body: %d, want 413", w.Code)
	}
	if e.read > 4*maxBody {
		t.Errorf("endless body: %d bytes read, want the reading to stop near %d", e.read, maxBody)
	}
	// Exactly at the limit is parsed.
	at := `{"long_url":"https://e.com/"}`
	at += strings.Repeat(" ", maxBody-len(at))
	r = httptest.NewRequest("POST", "http://sho.rt/api/links", strings.NewReader(at))
	r.Header.Set("Authorization", "Bearer "+testKey)
	if w := serveRequest(t, h, r); w.Code != http.StatusCreated {
		t.Errorf("body of exactly %d bytes: %d %s, want 201", maxBody, w.Code, w.Body)
	}
	if n := s.creates.Load(); n != 1 {
		t.Errorf("%d store creates, want 1 (oversized bodies never reach the store)", n)
	}
	// Before authentication nothing is read either.
	e = new(endless)
	r = httptest.NewRequest("POST", "http://sho.rt/api/links", e)
	if w := serveRequest(t, h, r); w.Code != http.StatusUnauthorized || e.read != 0 {
		t.Errorf("endless body without a key: %d after reading %d bytes, want 401 before reading", w.Code, e.read)
	}
}

// serveRequest is serve for a prepared request (a body of any reader).
func serveRequest(t *testing.T, h *Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer()))
	w := httptest.NewRecorder()
	if err := h.ServeHTTP(w, r, nextHandler); err != nil {
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) {
			t.Fatalf("%s %s: non-HTTP error %v", r.Method, r.URL, err)
		}
		w.Code = he.StatusCode
	}
	return w
}

func jsonBody(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func jsonDecode(b []byte, v any) error { return json.Unmarshal(b, v) }

// Custom codes that look like paths, traversal or other hosts are refused
// with 400 (never stored), and no answer echoes a line break.
func TestAttackCustomCodes(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, nil)
	codes := []string{
		"../", "..", ".", "../etc", "..%2f", "%2e%2e", "%2e%2e%2f", "%2E%2E", "//evil.com", "/evil", "a/b", `a\b`,
		"evil.com", "a.b", "a%2fb", "%00abc", "abc\x00", "abc\r\nSet-Cookie: x=1", "abc\nx", "ab", "a b c",
		"ünïcode", "api", "API", strings.Repeat("a", 65), "a?b", "a#b", "a;b", "<script>", "a'b", `a"b`,
	}
	for _, c := range codes {
		body, _ := jsonBody(map[string]string{"long_url": "https://example.com/", "code": c})
		w := serve(t, h, "POST", "/api/links", body, auth()...)
		if w.Code != http.StatusBadRequest {
			t.Errorf("custom code %q: %d %s, want 400", c, w.Code, w.Body)
		}
		noCRLF(t, "custom code "+c, w)
	}
	if s.len() != 0 {
		t.Errorf("%d links stored from refused codes", s.len())
	}
}

// Values with line breaks are refused or escaped: no response header ever
// carries one, whatever the long URL, code or path.
func TestAttackHeaderInjection(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, func(h *Handler) { h.SourceHeader = true })
	for _, long := range []string{
		"https://example.com/\r\nSet-Cookie: a=b", "https://example.com/\nLocation: https://evil.com",
		"https://example.com/\rx", "https://exa\r\nmple.com/", "https://example.com/%0d%0aSet-Cookie:%20a=b",
		"https://example.com/?q=%0D%0A", "https://example.com/#\r\n",
	} {
		body, _ := jsonBody(map[string]string{"long_url": long})
		w := serve(t, h, "POST", "/api/links", body, auth()...)
		noCRLF(t, "long_url "+long, w)
		if strings.ContainsAny(long, "\r\n") && w.Code != http.StatusBadRequest {
			t.Errorf("long_url %q: %d, want 400", long, w.Code)
		}
		if w.Code == http.StatusCreated {
			var out link.Response
			if err := jsonDecode(w.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			r := serve(t, h, "GET", "/"+out.Code, "")
			noCRLF(t, "redirect to "+long, r)
			if r.Code != http.StatusFound || r.Header().Get("Location") != long {
				t.Errorf("redirect to %q: %d %q", long, r.Code, r.Header().Get("Location"))
			}
		}
	}
	for _, path := range []string{"/abc%0d%0aSet-Cookie:%20a=b", "/api/links/abc%0d%0aX:1", "/%0a"} {
		for _, hdr := range [][]string{nil, auth()} {
			w := serve(t, h, "GET", path, "", hdr...)
			noCRLF(t, "GET "+path, w)
		}
	}
}

func TestAttackLogsRedactDSN(t *testing.T) {
	// A DSN with a password that cannot be reached: the provision error
	// names the store without the password.
	h := &Handler{Store: "postgres", DSN: "postgres://u:sekret-pw@127.0.0.1:1/db?connect_timeout=1"}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: t.Context()})
	defer cancel()
	err := h.Provision(ctx)
	if err == nil {
		h.Cleanup()
		t.Fatal("provisioned against a closed port")
	}
	t.Logf("provision error: %v", err)
	if strings.Contains(err.Error(), "sekret-pw") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("provision error %q contains the DSN password", err)
	}
	h.Cleanup()
}

// An expiry far in the future (past 2262, where Unix nanoseconds overflow)
// is either refused or honoured: the link redirects, from the store and
// from the caches, until then.
func TestAttackFarFutureExpiry(t *testing.T) {
	s := newMemStore()
	h := newHandler(t, s, nil)
	for _, at := range []string{"2261-12-31T00:00:00Z", "2263-01-01T00:00:00Z", "3000-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
		w := serve(t, h, "POST", "/api/links", `{"long_url":"https://example.com/far","expires_at":"`+at+`"}`, auth()...)
		if w.Code == http.StatusBadRequest {
			continue
		}
		if w.Code != http.StatusCreated {
			t.Fatalf("expires_at %s: %d %s", at, w.Code, w.Body)
		}
		var out link.Response
		if err := jsonDecode(w.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // the store, then L1
			if r := serve(t, h, "GET", "/"+out.Code, ""); r.Code != http.StatusFound {
				t.Errorf("expires_at %s, redirect %d: %d, want 302 until then", at, i+1, r.Code)
			}
		}
	}
}

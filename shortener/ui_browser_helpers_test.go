package shortener

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// The browser tests drive Debian's Chromium with playwright-core (both
// installed by scripts/browser.sh, which make test runs first) against
// the handler behind a real HTTP server. The scripts are in ../e2e.

// chromiumPath is the browser the scripts launch (CHROMIUM overrides it).
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// needBrowser finds node, Chromium and playwright-core: under CI=true a
// missing one fails the test, elsewhere it skips it with what to run.
func needBrowser(t *testing.T) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("..", "e2e"))
	node, err := exec.LookPath("node")
	switch {
	case err != nil:
		err = errors.New("node is not installed")
	case !isFile(chromiumPath()):
		err = errors.New(chromiumPath() + " is missing")
	case !isFile(filepath.Join(dir, "node_modules", "playwright-core", "package.json")):
		err = errors.New("e2e/node_modules has no playwright-core")
	}
	if err == nil {
		return node, dir
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("browser tests: %v (run scripts/browser.sh)", err)
	}
	t.Skipf("browser tests: %v: run scripts/browser.sh (as root it installs what is missing)", err)
	return "", ""
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// runNode runs e2e/<script> with env added, within limit; its output is
// logged, a non-zero exit fails the test. It returns the JSON of the
// script's last "RESULT " line (nil if none).
func runNode(t *testing.T, script string, limit time.Duration, env ...string) []byte {
	t.Helper()
	node, dir := needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"CHROMIUM=" + chromiumPath()}, env...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var result []byte
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		line := sc.Text()
		if r, ok := strings.CutPrefix(line, "RESULT "); ok {
			result = []byte(r)
			continue
		}
		t.Log(line)
	}
	t.Logf("node %s: %v", script, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
	return result
}

// forwardedFor is the header a test client sets to click from another
// address, as Caddy's trusted_proxies would take it from a proxy.
const forwardedFor = "X-Forwarded-For"

// statusWriter keeps the status of an answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// dashboardServer serves h on a loopback port as Caddy would run it (a
// replacer and the client IP in the request's context); next answers 404.
// seen, if not nil, is told each request and the status it got.
func dashboardServer(t testing.TB, h *Handler, seen func(r *http.Request, status int)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &statusWriter{ResponseWriter: rw}
		if seen != nil {
			defer func() { seen(r, w.status) }()
		}
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		if f := r.Header.Get(forwardedFor); f != "" {
			ip = f
		}
		ctx := context.WithValue(r.Context(), caddy.ReplacerCtxKey, caddy.NewReplacer())
		ctx = context.WithValue(ctx, caddyhttp.VarsCtxKey, map[string]any{caddyhttp.ClientIPVarKey: ip})
		err := h.ServeHTTP(w, r.WithContext(ctx), caddyhttp.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) error {
			http.NotFound(w, r)
			return nil
		}))
		var he caddyhttp.HandlerError
		if errors.As(err, &he) {
			w.WriteHeader(he.StatusCode)
		} else if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// otherOrigin serves a blank page on another port: another origin of the
// same site (127.0.0.1), from which the CSRF attempts are made.
func otherOrigin(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>another origin</title><p>another origin</p>"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// decodeResult decodes a script's RESULT line into out.
func decodeResult(t *testing.T, b []byte, out any) {
	t.Helper()
	if b == nil {
		t.Fatal("the script printed no RESULT line")
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("RESULT %s: %v", b, err)
	}
}

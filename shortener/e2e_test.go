package shortener

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestE2E loads a link-domain Caddyfile (PostgreSQL, Redis, API key from the
// environment) into a real Caddy on free ports, creates a link over HTTP,
// follows it, revokes it, and reloads the config onto the embedded store
// twice (the second reload shares the store file with the config it
// replaces).
func TestE2E(t *testing.T) {
	_, prefix := testenv.Redis(t)
	t.Setenv("SHORTENER_E2E_DSN", testenv.Postgres(t))
	t.Setenv("SHORTENER_E2E_KEY", "e2e-secret-key-0123456789")
	admin, port := testenv.FreePort(t), testenv.FreePort(t)
	config := func(store, status string) string {
		return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://localhost:%[2]d {
	shortener {
		%[6]s
		redis {
			url %[4]s
			key_prefix %[5]s
		}
		status %[7]s
		api /api
		api_key {env.SHORTENER_E2E_KEY}
		source_header
	}
	respond / "home" 200
	handle_errors {
		respond "{err.status_code} {err.status_text}"
	}
}
`, admin, port, testenv.FreePort(t), testenv.RedisURL(t), prefix, store, status)
	}
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 20 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(config("store postgres {env.SHORTENER_E2E_DSN}", "302"), "caddyfile")
	if t.Failed() {
		return
	}
	base := fmt.Sprintf("http://localhost:%d", port)
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	do := func(method, path, body string, withKey bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if withKey {
			req.Header.Set("Authorization", "Bearer e2e-secret-key-0123456789")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	if resp, body := do("POST", "/api/links", `{"long_url":"https://example.com/"}`, false); resp.StatusCode != 401 {
		t.Errorf("create without key = %d %s, want 401", resp.StatusCode, body)
	}
	resp, body := do("POST", "/api/links", `{"long_url":"https://example.com/e2e?x=1"}`, true)
	if resp.StatusCode != 201 {
		t.Fatalf("create = %d %s", resp.StatusCode, body)
	}
	var out link.Response
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if out.ShortURL != base+"/"+out.Code {
		t.Errorf("short_url %q, want %q", out.ShortURL, base+"/"+out.Code)
	}
	resp, _ = do("GET", "/"+out.Code, "", false)
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "https://example.com/e2e?x=1" ||
		resp.Header.Get("X-Robots-Tag") != "noindex" || resp.Header.Get("Cache-Control") != "private, max-age=0" {
		t.Errorf("redirect = %d %v", resp.StatusCode, resp.Header)
	}
	if resp, body := do("GET", "/", "", false); resp.StatusCode != 200 || body != "home" {
		t.Errorf("GET / = %d %q, want the next handler's page", resp.StatusCode, body)
	}
	if resp, body := do("GET", "/nothere", "", false); resp.StatusCode != 404 || body != "404 Not Found" {
		t.Errorf("unknown code = %d %q, want handle_errors' 404 page", resp.StatusCode, body)
	}
	if resp, _ := do("DELETE", "/api/links/"+out.Code, "", true); resp.StatusCode != 204 {
		t.Fatalf("DELETE = %d", resp.StatusCode)
	}
	if resp, body := do("GET", "/"+out.Code, "", false); resp.StatusCode != 410 || body != "410 Gone" {
		t.Errorf("revoked = %d %q, want 410", resp.StatusCode, body)
	}

	// Reload onto the embedded store, then reload again: the new config is
	// provisioned while the old one still holds the file.
	path := filepath.Join(t.TempDir(), "links.db")
	tester.InitServer(config("store embedded "+path, "302"), "caddyfile")
	resp, body = do("POST", "/api/links", `{"long_url":"https://example.com/emb","code":"emb-link"}`, true)
	if resp.StatusCode != 201 {
		t.Fatalf("create on embedded = %d %s", resp.StatusCode, body)
	}
	tester.InitServer(config("store embedded "+path, "301"), "caddyfile")
	if t.Failed() {
		return
	}
	resp, _ = do("GET", "/emb-link", "", false)
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "https://example.com/emb" {
		t.Errorf("after reload = %d %q, want 301 to the link", resp.StatusCode, resp.Header.Get("Location"))
	}
}

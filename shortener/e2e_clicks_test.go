package shortener

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/shortener/clicks"
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// TestE2EClicks loads a Caddyfile with click settings into a real Caddy
// (PostgreSQL, Redis), follows a link over HTTP, and reloads the config
// while the clicks are still buffered (the batch interval is an hour): the
// reload flushes them, and the new config's stats API counts every GET
// and no HEAD.
func TestE2EClicks(t *testing.T) {
	_, prefix := testenv.Redis(t)
	t.Setenv("SHORTENER_E2E_DSN", testenv.Postgres(t))
	admin, port, httpsPort := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	config := func(status string) string {
		return fmt.Sprintf(`{
	admin localhost:%[1]d
	http_port %[2]d
	https_port %[3]d
	auto_https off
	skip_install_trust
}

http://localhost:%[2]d {
	shortener {
		store postgres {env.SHORTENER_E2E_DSN}
		redis {
			url %[4]s
			key_prefix %[5]s
		}
		status %[6]s
		api /api
		api_key e2e-clicks-key-0123456789
		clicks on
		clicks_buffer 4096
		clicks_batch 1000 1h
		clicks_stream_maxlen 10000
	}
}
`, admin, port, httpsPort, testenv.RedisURL(t), prefix, status)
	}
	tester := caddytest.NewTester(t).WithDefaultOverrides(caddytest.Config{
		AdminPort:          admin,
		LoadRequestTimeout: 20 * time.Second,
		TestRequestTimeout: 10 * time.Second,
	})
	tester.InitServer(config("302"), "caddyfile")
	if t.Failed() {
		return
	}
	base := fmt.Sprintf("http://localhost:%d", port)
	client := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer e2e-clicks-key-0123456789")
		req.Header.Set("User-Agent", testBrowserUA)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := do("POST", "/api/links", `{"long_url":"https://example.com/e2e-clicks"}`)
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var link link.Response
	if err := json.Unmarshal([]byte(body), &link); err != nil {
		t.Fatal(err)
	}
	const gets = 30
	for range gets {
		if status, _ := do("GET", "/"+link.Code, ""); status != 302 {
			t.Fatalf("GET = %d", status)
		}
	}
	for range 5 {
		if status, _ := do("HEAD", "/"+link.Code, ""); status != 302 {
			t.Fatalf("HEAD = %d", status)
		}
	}
	stats := func() clicks.Stats {
		t.Helper()
		status, body := do("GET", "/api/links/"+link.Code+"/stats", "")
		var st clicks.Stats
		if status != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("stats = %d %s", status, body)
		}
		return st
	}
	if st := stats(); st.Total != 0 {
		t.Fatalf("stats before the reload = %d clicks; the test needs them buffered", st.Total)
	}

	tester.InitServer(config("307"), "caddyfile")
	if t.Failed() {
		return
	}
	if status, _ := do("GET", "/api/links/"+link.Code, ""); status != 200 {
		t.Fatalf("GET link after reload = %d", status)
	}
	deadline := time.Now().Add(20 * time.Second)
	for stats().Total < gets && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if st := stats(); st.Total != gets || st.People != gets {
		t.Errorf("after reload: total %d people %d, want %d (every GET, no HEAD)", st.Total, st.People, gets)
	}
	status, body = do("GET", "/api/links/"+link.Code, "")
	var got map[string]any
	if status != 200 || json.Unmarshal([]byte(body), &got) != nil || got["clicks"] != float64(gets) {
		t.Errorf("GET link = %d %s, want clicks %d", status, body, gets)
	}
}

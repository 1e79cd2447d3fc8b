package ratelimit

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// TestE2E loads a Caddyfile into a real Caddy (in this process, on free
// ports) and limits real HTTP requests: a fail-closed /login counting only
// failed logins, and a per-key API quota whose refusals handle_errors shapes
// with the ratelimit placeholders.
func TestE2E(t *testing.T) {
	_, prefix := testenv.Redis(t)
	redisURL := testenv.RedisURL(t)
	tester, port := startCaddy(t, "", fmt.Sprintf(`
http://localhost:$PORT {
	route /login {
		ratelimit {
			zone login {
				key {client_ip}
				events 2
				window 1m
				algorithm sliding_log
				count_status 401
			}
			redis {
				url %[1]s
				key_prefix %[2]s
			}
			timeout 2s
			on_error closed
		}
		@good header X-Password letmein
		respond @good "welcome" 200
		respond "wrong password" 401
	}
	ratelimit /api/* {
		zone per_key {
			key {http.request.header.X-API-Key}
			events 3
			window 1m
		}
		redis {
			url %[1]s
			key_prefix %[2]s
		}
		timeout 2s
		on_error closed
	}
	handle_errors 429 {
		respond "slow down: {http.ratelimit.zone}, retry in {http.ratelimit.retry_after}s" 429
	}
	respond "ok"
}
`, redisURL, prefix))
	base := fmt.Sprintf("http://localhost:%d", port)

	send := func(path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}

	// The API: 3 per minute per key.
	for i := range 3 {
		res, body := send("/api/items", "X-API-Key", "e2e-key")
		if res.StatusCode != http.StatusOK || body != "ok" {
			t.Fatalf("API request %d: %d %q, want 200 ok", i+1, res.StatusCode, body)
		}
		if got, want := res.Header.Get("RateLimit"), fmt.Sprintf(`"per_key";r=%d;t=`, 2-i); !strings.HasPrefix(got, want) {
			t.Errorf("API request %d: RateLimit = %q, want prefix %q", i+1, got, want)
		}
	}
	res, body := send("/api/items", "X-API-Key", "e2e-key")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th API request: status %d, want 429", res.StatusCode)
	}
	// One token every 20s: the wait is 20s less the time since the first
	// request, rounded up.
	retry := res.Header.Get("Retry-After")
	if n, err := strconv.Atoi(retry); err != nil || n < 15 || n > 20 {
		t.Errorf("Retry-After = %q, want about 20", retry)
	}
	if want := "slow down: per_key, retry in " + retry + "s"; body != want {
		t.Errorf("4th API request body = %q, want %q (handle_errors with the placeholders)", body, want)
	}
	if got := res.Header.Get("RateLimit-Policy"); got != `"per_key";q=3;w=60` {
		t.Errorf("RateLimit-Policy = %q", got)
	}
	if res, _ := send("/api/items", "X-API-Key", "other-key"); res.StatusCode != http.StatusOK {
		t.Errorf("another key: status %d, want 200", res.StatusCode)
	}
	if res, _ := send("/elsewhere"); res.StatusCode != http.StatusOK || res.Header.Get("RateLimit") != "" {
		t.Errorf("unlimited path: status %d RateLimit %q, want 200 and no headers", res.StatusCode, res.Header.Get("RateLimit"))
	}

	// /login: good passwords take nothing; two failures exhaust the zone.
	for range 3 {
		if res, body := send("/login", "X-Password", "letmein"); res.StatusCode != http.StatusOK || body != "welcome" {
			t.Fatalf("good login: %d %q, want 200 welcome", res.StatusCode, body)
		}
	}
	for i := range 2 {
		if res, _ := send("/login", "X-Password", "guess"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad login %d: status %d, want 401", i+1, res.StatusCode)
		}
	}
	if res, body := send("/login", "X-Password", "letmein"); res.StatusCode != http.StatusTooManyRequests ||
		!strings.HasPrefix(body, "slow down: login, retry in ") {
		t.Errorf("login after 2 failures: %d %q, want 429 from zone login", res.StatusCode, body)
	}
}

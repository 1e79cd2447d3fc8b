package ratelimit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// problem is the RFC 9457 body of a refusal.
type problem struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Zone       string `json:"zone"`
	RetryAfter int64  `json:"retry_after"`
}

// TestRefusalProblemBody: with `body problem`, a refusal the handler
// writes itself carries a problem+json body agreeing with its headers;
// when an error route could shape it, it is returned as an error, no body
// written.
func TestRefusalProblemBody(t *testing.T) {
	errorRoutes := &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}
	for _, tt := range []struct {
		name   string
		server *caddyhttp.Server
		status int
	}{
		{"no error routes", &caddyhttp.Server{}, 0},
		{"status 503", &caddyhttp.Server{}, http.StatusServiceUnavailable},
		{"handle_errors routes", &caddyhttp.Server{Errors: errorRoutes}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{zone("api-v1", 1, time.Hour)}, Body: "problem", Status: tt.status}
			memoryHandler(t, h)
			serve := func() (*httptest.ResponseRecorder, error) {
				w := httptest.NewRecorder()
				req := caddyhttp.PrepareRequest(get("/", "X-API-Key", "k"), caddy.NewReplacer(), w, tt.server)
				return w, h.ServeHTTP(w, req, new(statusHandler))
			}
			if _, err := serve(); err != nil {
				t.Fatalf("first request: %v", err)
			}
			w, err := serve()
			if tt.server.Errors != nil {
				if err == nil || w.Body.Len() != 0 {
					t.Fatalf("with error routes: ServeHTTP = %v, body %q; want the error returned, no body", err, w.Body.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("ServeHTTP = %v, want the refusal written", err)
			}
			want := cmp.Or(tt.status, http.StatusTooManyRequests)
			if w.Code != want || w.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("refusal: %d %q, want %d application/problem+json", w.Code, w.Header().Get("Content-Type"), want)
			}
			if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
				t.Errorf("Content-Length %s, body %d bytes", cl, w.Body.Len())
			}
			var p problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body.String(), err)
			}
			wantP := problem{
				Type: "about:blank", Title: http.StatusText(want), Status: want,
				Detail: `Rate limit exceeded in zone "api-v1": retry in 3600 s.`, Zone: "api-v1", RetryAfter: 3600,
			}
			if p != wantP || w.Header().Get("Retry-After") != "3600" {
				t.Errorf("body = %+v (Retry-After %s), want %+v", p, w.Header().Get("Retry-After"), wantP)
			}
		})
	}
}

// TestProblemBodyE2E: in a real Caddy, `body problem` answers a refusal
// with problem+json in a site without handle_errors, and handle_errors
// still shapes it in a site that has one.
func TestProblemBodyE2E(t *testing.T) {
	port2 := testenv.FreePort(t)
	const block = `
		zone api {
			key {http.request.header.X-API-Key}
			events 1
			window 1m
		}
		body problem`
	tester, port := startCaddy(t, "", fmt.Sprintf(`
http://localhost:$PORT {
	ratelimit {%[1]s
	}
	respond "ok"
}

http://localhost:%[2]d {
	ratelimit {%[1]s
	}
	handle_errors 429 {
		respond "shaped by handle_errors: {http.ratelimit.zone}" 429
	}
	respond "ok"
}
`, block, port2))
	send := func(port int) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://localhost:%d/", port), nil)
		req.Header.Set("X-API-Key", "k")
		res, err := tester.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	for _, p := range []int{port, port2} {
		if res, _ := send(p); res.StatusCode != http.StatusOK {
			t.Fatalf("first request on :%d: %d", p, res.StatusCode)
		}
	}
	res, body := send(port)
	var p problem
	if err := json.Unmarshal([]byte(body), &p); err != nil || res.StatusCode != http.StatusTooManyRequests ||
		res.Header.Get("Content-Type") != "application/problem+json" || p.Zone != "api" ||
		strconv.FormatInt(p.RetryAfter, 10) != res.Header.Get("Retry-After") {
		t.Errorf("refusal without handle_errors: %d %q %s (%v)", res.StatusCode, res.Header.Get("Content-Type"), body, err)
	}
	t.Logf("refusal: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	if res, body := send(port2); res.StatusCode != http.StatusTooManyRequests || body != "shaped by handle_errors: api" {
		t.Errorf("refusal with handle_errors: %d %q, want handle_errors' page", res.StatusCode, body)
	}
}

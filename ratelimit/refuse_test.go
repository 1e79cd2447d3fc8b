package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/internal/errroute"
)

// A refusal is returned as an error whenever an error route could shape
// it, and written directly (the status Caddy's server would write, with
// the same headers and placeholders) when none could.
func TestRefusalWrittenWithoutErrorRoutes(t *testing.T) {
	errorRoutes := &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}
	tests := []struct {
		name       string
		server     *caddyhttp.Server
		inError    bool // the request is already in the error routes
		routeAbove bool // an enclosing subroute has error routes
		wantError  bool
	}{
		{"no error routes", &caddyhttp.Server{}, false, false, false},
		{"handle_errors routes", &caddyhttp.Server{Errors: errorRoutes}, false, false, true},
		{"empty errors config", &caddyhttp.Server{Errors: &caddyhttp.HTTPErrorConfig{}}, false, false, false},
		{"in the error routes", &caddyhttp.Server{}, true, false, true},
		{"a subroute with error routes", &caddyhttp.Server{}, false, true, true},
		{"no server (unknown)", nil, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{zone("api", 1, time.Hour)}}
			memoryHandler(t, h)
			h.direct = errroute.Direct{Above: tt.routeAbove}
			next := new(statusHandler)
			serve := func() (*httptest.ResponseRecorder, *caddy.Replacer, error) {
				req := get("/", "X-API-Key", "k")
				if tt.inError {
					req = req.WithContext(context.WithValue(req.Context(), caddyhttp.ErrorCtxKey, errors.New("earlier")))
				}
				w := httptest.NewRecorder()
				repl := caddy.NewReplacer()
				req = caddyhttp.PrepareRequest(req, repl, w, tt.server)
				return w, repl, h.ServeHTTP(w, req, next)
			}
			if _, _, err := serve(); err != nil {
				t.Fatalf("first request: %v", err)
			}
			w, repl, err := serve()
			var he caddyhttp.HandlerError
			switch {
			case tt.wantError:
				if !errors.As(err, &he) || he.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("ServeHTTP = %v, want a 429 HandlerError", err)
				}
			default:
				if err != nil {
					t.Fatalf("ServeHTTP = %v, want nil (the refusal written)", err)
				}
				if w.Code != http.StatusTooManyRequests {
					t.Errorf("status = %d, want 429", w.Code)
				}
				if w.Body.Len() != 0 {
					t.Errorf("body = %q, want empty as Caddy writes it", w.Body.String())
				}
			}
			if got := w.Header().Get("Retry-After"); got != "3600" {
				t.Errorf("Retry-After = %q, want 3600", got)
			}
			if got, _ := repl.Get("http.ratelimit.zone"); got != "api" {
				t.Errorf("{http.ratelimit.zone} = %v, want api", got)
			}
			if next.Calls() != 1 {
				t.Errorf("next saw %d requests, want 1", next.Calls())
			}
		})
	}
}

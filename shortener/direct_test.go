package shortener

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
	"github.com/edgekit/caddy-edgekit/shortener/link"
)

// A 404 or 410 on the redirect path is written directly (empty body, the
// status Caddy's server would write) when no error route could shape it,
// and returned as an error for handle_errors otherwise.
func TestRedirectFailureWrittenWithoutErrorRoutes(t *testing.T) {
	s := newMemStore()
	past := time.Now().Add(-time.Hour)
	s.links["gone01"] = link.Link{Code: "gone01", LongURL: "https://example.com/", CreatedAt: past, RevokedAt: past}
	errorRoutes := &caddyhttp.HTTPErrorConfig{Routes: caddyhttp.RouteList{{}}}
	for _, tt := range []struct {
		name      string
		server    *caddyhttp.Server
		above     bool
		wantError bool
	}{
		{"no error routes", &caddyhttp.Server{}, false, false},
		{"handle_errors routes", &caddyhttp.Server{Errors: errorRoutes}, false, true},
		{"a subroute with error routes", &caddyhttp.Server{}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandler(t, s, nil)
			h.direct = errroute.Direct{Above: tt.above}
			for _, c := range []struct {
				path   string
				status int
			}{{"/nosuch1", http.StatusNotFound}, {"/gone01", http.StatusGone}, {"/bad~code", http.StatusNotFound}} {
				for range 2 { // a store answer, then an L1 (negative) hit
					w := httptest.NewRecorder()
					req := httptest.NewRequest("GET", "http://sho.rt"+c.path, nil)
					req = caddyhttp.PrepareRequest(req.WithContext(context.Background()), caddy.NewReplacer(), w, tt.server)
					err := h.ServeHTTP(w, req, nextHandler)
					var he caddyhttp.HandlerError
					switch {
					case tt.wantError:
						if !errors.As(err, &he) || he.StatusCode != c.status {
							t.Fatalf("GET %s = %v, want a %d HandlerError", c.path, err, c.status)
						}
					case err != nil:
						t.Fatalf("GET %s = %v, want nil (written)", c.path, err)
					case w.Code != c.status || w.Body.Len() != 0 || w.Header().Get("Location") != "":
						t.Fatalf("GET %s wrote %d %q (Location %q), want a bare %d", c.path, w.Code, w.Body, w.Header().Get("Location"), c.status)
					}
				}
			}
		})
	}
}

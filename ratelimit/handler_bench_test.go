package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// benchmarkHandler measures ServeHTTP for an allowed request on h, the
// request already prepared as Caddy's server does.
func benchmarkHandler(b *testing.B, h *Handler) {
	b.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: b.Context()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	defer h.Cleanup()
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/items", nil)
	req.Header.Set("X-API-Key", "bench-key")
	req = caddyhttp.PrepareRequest(req, caddy.NewReplacer(), w, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := h.ServeHTTP(w, req, next); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHandlerMemoryOneZone(b *testing.B) {
	benchmarkHandler(b, &Handler{Zones: []*Zone{zone("bench", 1_000_000_000, time.Second)}})
}

func BenchmarkHandlerMemoryTwoZones(b *testing.B) {
	benchmarkHandler(b, &Handler{Zones: []*Zone{
		zone("bench-key", 1_000_000_000, time.Second),
		{Name: "bench-ip", Key: "{client_ip}", Events: 1_000_000_000, Window: caddy.Duration(time.Second), Algorithm: SlidingWindow},
	}})
}

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
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// benchmarkHandler measures ServeHTTP on h, the request already prepared
// as Caddy's server does; every request must get status want (200: passed
// on; else the status of the handler's error).
func benchmarkHandler(b *testing.B, h *Handler, want int) {
	b.Helper()
	benchmarkHandlerIn(b, h, want, context.Background())
}

// benchmarkHandlerWith is benchmarkHandler with the request's headers
// (name, value pairs) besides X-API-Key.
func benchmarkHandlerWith(b *testing.B, h *Handler, want int, headers ...string) {
	b.Helper()
	benchmarkHandlerIn(b, h, want, context.Background(), headers...)
}

// benchmarkHandlerContext is benchmarkHandler of a passed request whose
// context derives from ctx (a traced request: see tracing_test.go).
func benchmarkHandlerContext(b *testing.B, h *Handler, ctx context.Context) {
	b.Helper()
	benchmarkHandlerIn(b, h, http.StatusOK, ctx)
}

func benchmarkHandlerIn(b *testing.B, h *Handler, want int, reqCtx context.Context, headers ...string) {
	b.Helper()
	if h.logger == nil {
		h.logger = zap.NewNop() // as `make bench`, which logs errors only
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: b.Context()})
	defer cancel()
	if err := h.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	defer h.Cleanup()
	next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
	w := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(reqCtx, http.MethodGet, "/v1/items", nil)
	req.Header.Set("X-API-Key", "bench-key")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	req = benchRequest(req, w)
	if want != http.StatusOK { // exhaust the quota first
		for range 2 {
			_ = h.ServeHTTP(w, req, next)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		checkBenchStatus(b, w, h.ServeHTTP(w, req, next), want)
	}
}

// benchRequest prepares req as Caddy's server does for a site with no
// error routes (the setup of `make bench`): a refusal is then written by
// the handler, not returned through Caddy's error path.
func benchRequest(req *http.Request, w http.ResponseWriter) *http.Request {
	return caddyhttp.PrepareRequest(req, caddy.NewReplacer(), w, &caddyhttp.Server{})
}

func checkBenchStatus(b *testing.B, w *httptest.ResponseRecorder, err error, want int) {
	if err == nil && (want == http.StatusOK || w.Code == want) {
		return // passed on, or refused with the status written
	}
	if he := (caddyhttp.HandlerError{}); !errors.As(err, &he) || he.StatusCode != want {
		b.Fatalf("ServeHTTP = %v, want status %d", err, want)
	}
}

func BenchmarkHandlerMemoryOneZone(b *testing.B) {
	benchmarkHandler(b, &Handler{Zones: []*Zone{zone("bench", 1_000_000_000, time.Second)}}, http.StatusOK)
}

func BenchmarkHandlerMemoryTwoZones(b *testing.B) {
	benchmarkHandler(b, &Handler{Zones: []*Zone{
		zone("bench-key", 1_000_000_000, time.Second),
		{Name: "bench-ip", Key: "{client_ip}", Events: 1_000_000_000, Window: caddy.Duration(time.Second), Algorithm: limiter.SlidingWindow},
	}}, http.StatusOK)
}

func BenchmarkHandlerMemoryRefused(b *testing.B) {
	benchmarkHandler(b, &Handler{Zones: []*Zone{zone("bench", 1, time.Hour)}}, http.StatusTooManyRequests)
}

// BenchmarkHandlerMemoryClientNetwork: a zone keyed by
// {http.ratelimit.client_network}, an IPv6 client.
func BenchmarkHandlerMemoryClientNetwork(b *testing.B) {
	z := zone("bench", 1_000_000_000, time.Second)
	z.Key = "{http.ratelimit.client_network}"
	benchmarkHandler(b, &Handler{Zones: []*Zone{z}}, http.StatusOK)
}

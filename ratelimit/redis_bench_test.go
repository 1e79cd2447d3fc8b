package ratelimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
)

// benchParallelism is goroutines per GOMAXPROCS in the parallel Redis
// benchmarks: 32 on 2 cores is the 64 connections of `make bench`.
const benchParallelism = 32

// benchCallModes are the ways the Redis store can send its calls, compared
// side by side in one run.
var benchCallModes = []struct {
	name string
	mode callMode
}{
	{"plain", callsPlain},
	{"autopipeline", callsAutoPipeline},
	{"coalesce", callsCoalesced},
}

// benchmarkRedisHandler measures ServeHTTP on a handler on the shared
// test Redis, from benchParallelism×GOMAXPROCS concurrent requests that
// all expect status want.
func benchmarkRedisHandler(b *testing.B, zones func() []*Zone, want int, setup func(*Handler)) {
	b.Helper()
	for _, m := range benchCallModes {
		b.Run(m.name, func(b *testing.B) {
			_, prefix := testenv.Redis(b)
			h := &Handler{
				Zones:  zones(),
				Redis:  &redispool.Config{URL: testenv.RedisURL(b), KeyPrefix: prefix},
				calls:  m.mode,
				logger: zap.NewNop(),
				// Measure decisions, not failures: a slow answer on this
				// shared machine fails the benchmark rather than passing
				// the request unlimited.
				OnError: "closed",
				Timeout: caddy.Duration(time.Second),
			}
			if setup != nil {
				setup(h)
			}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: b.Context()})
			defer cancel()
			if err := h.Provision(ctx); err != nil {
				b.Fatal(err)
			}
			defer h.Cleanup()
			next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
			newRequest := func() (*httptest.ResponseRecorder, *http.Request) {
				w := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/v1/items", nil)
				req.Header.Set("X-API-Key", "bench-key")
				return w, caddyhttp.PrepareRequest(req, caddy.NewReplacer(), w, nil)
			}
			if want != http.StatusOK { // exhaust the quota first
				w, req := newRequest()
				for range 2 {
					_ = h.ServeHTTP(w, req, next)
				}
			}
			b.SetParallelism(benchParallelism)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w, req := newRequest()
				for pb.Next() {
					checkBenchStatus(b, h.ServeHTTP(w, req, next), want)
				}
			})
		})
	}
}

func BenchmarkHandlerRedisAllowed(b *testing.B) {
	benchmarkRedisHandler(b, func() []*Zone {
		return []*Zone{zone("bench", 1_000_000_000, time.Second)}
	}, http.StatusOK, nil)
}

func BenchmarkHandlerRedisRefused(b *testing.B) {
	benchmarkRedisHandler(b, func() []*Zone {
		return []*Zone{zone("bench", 1, time.Hour)}
	}, http.StatusTooManyRequests, nil)
}

func BenchmarkHandlerRedisThreeZones(b *testing.B) {
	benchmarkRedisHandler(b, func() []*Zone {
		return []*Zone{
			zone("a", 1_000_000_000, time.Second),
			{Name: "b", Key: "{http.request.host}", Events: 1_000_000_000, Window: caddy.Duration(time.Minute), Algorithm: SlidingWindow},
			{Name: "c", Key: "{http.request.method}", Events: 1_000_000_000, Window: caddy.Duration(time.Minute), Algorithm: FixedWindow},
		}
	}, http.StatusOK, nil)
}

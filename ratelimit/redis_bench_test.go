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
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// benchParallelism is goroutines per GOMAXPROCS in the parallel Redis
// benchmarks: 32 on 2 cores is the 64 connections of `make bench`.
const benchParallelism = 32

// redisVariant is one way of running the Redis store, compared side by
// side with the others in one run.
type redisVariant struct {
	name   string
	noDeny bool // without the deny cache
	approx bool // every zone approximate (100ms)
}

// callVariants compare exact and approximate decisions.
var callVariants = []redisVariant{
	{"coalesce", false, false},
	{"approximate", false, true},
}

// benchmarkRedisHandler measures ServeHTTP on a handler on the shared
// test Redis, from benchParallelism×GOMAXPROCS concurrent requests that
// all expect status want, once per variant.
func benchmarkRedisHandler(b *testing.B, variants []redisVariant, zones func() []*Zone, want int) {
	b.Helper()
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			_, prefix := testenv.Redis(b)
			zs := zones()
			if v.approx {
				for _, z := range zs {
					z.Approximate = caddy.Duration(100 * time.Millisecond)
				}
			}
			h := &Handler{
				Zones:  zs,
				Redis:  &redispool.Config{URL: testenv.RedisURL(b), KeyPrefix: prefix},
				logger: zap.NewNop(),
				// Measure decisions, not failures: a slow answer on this
				// shared machine fails the benchmark rather than passing
				// the request unlimited.
				OnError: "closed",
				Timeout: caddy.Duration(time.Second),
			}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: b.Context()})
			defer cancel()
			if err := h.Provision(ctx); err != nil {
				b.Fatal(err)
			}
			defer h.Cleanup()
			if v.noDeny {
				h.deny = nil
			}
			trips := new(testenv.RoundTrips) // script round trips per request
			h.client.AddHook(trips)
			next := caddyhttp.HandlerFunc(func(http.ResponseWriter, *http.Request) error { return nil })
			newRequest := func() (*httptest.ResponseRecorder, *http.Request) {
				w := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/v1/items", nil)
				req.Header.Set("X-API-Key", "bench-key")
				return w, benchRequest(req, w)
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
					checkBenchStatus(b, w, h.ServeHTTP(w, req, next), want)
				}
			})
			b.ReportMetric(float64(trips.N.Load())/float64(b.N), "trips/op")
		})
	}
}

func BenchmarkHandlerRedisAllowed(b *testing.B) {
	benchmarkRedisHandler(b, callVariants, func() []*Zone {
		return []*Zone{zone("bench", 1_000_000_000, time.Second)}
	}, http.StatusOK)
}

func BenchmarkHandlerRedisRefused(b *testing.B) {
	benchmarkRedisHandler(b, []redisVariant{
		{"coalesce-nodeny", true, false},
		{"coalesce-deny", false, false},
		{"approximate", false, true},
	}, func() []*Zone {
		return []*Zone{zone("bench", 1, time.Hour)}
	}, http.StatusTooManyRequests)
}

// BenchmarkHandlerRedisBanZone: a zone with a ban, allowed: each decision
// carries the ban's parameters and its ban key.
func BenchmarkHandlerRedisBanZone(b *testing.B) {
	benchmarkRedisHandler(b, callVariants[:1], func() []*Zone {
		z := zone("bench", 1_000_000_000, time.Second)
		z.Ban, z.BanAfter = caddy.Duration(time.Minute), 3
		return []*Zone{z}
	}, http.StatusOK)
}

func BenchmarkHandlerRedisThreeZones(b *testing.B) {
	benchmarkRedisHandler(b, callVariants, func() []*Zone {
		return []*Zone{
			zone("a", 1_000_000_000, time.Second),
			{Name: "b", Key: "{http.request.host}", Events: 1_000_000_000, Window: caddy.Duration(time.Minute), Algorithm: limiter.SlidingWindow},
			{Name: "c", Key: "{http.request.method}", Events: 1_000_000_000, Window: caddy.Duration(time.Minute), Algorithm: limiter.FixedWindow},
		}
	}, http.StatusOK)
}

package ratelimit

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// monthZones are make bench's cases 20 and 21 on the memory store: a
// per-minute zone and a calendar month zone, both keyed by key.
func monthZones(key string) []*Zone {
	return []*Zone{
		{Name: "per_minute", Key: key, Events: 1_000_000_000, Window: caddy.Duration(time.Minute)},
		{Name: "monthly", Key: key, Events: 1_000_000_000, Algorithm: "fixed_window", Calendar: "month"},
	}
}

// BenchmarkHandlerMemoryJWT: the two zones keyed by a verified RS256
// token's sub (a token seen before: the verifier's cache).
func BenchmarkHandlerMemoryJWT(b *testing.B) {
	k := testJWTKeys(b)
	h := jwtHandler(b, k, "", monthZones("{http.ratelimit.jwt.sub}")...)
	benchmarkHandlerWith(b, h, http.StatusOK, "Authorization", "Bearer "+k.rs256(b, jwtClaims("alice", nil)))
}

// BenchmarkHandlerMemoryJWTHeader: the same request, the zones keyed by a header.
func BenchmarkHandlerMemoryJWTHeader(b *testing.B) {
	k := testJWTKeys(b)
	h := &Handler{Zones: monthZones("{http.request.header.X-Customer}")}
	benchmarkHandlerWith(b, h, http.StatusOK, "Authorization", "Bearer "+k.rs256(b, jwtClaims("alice", nil)), "X-Customer", "alice")
}

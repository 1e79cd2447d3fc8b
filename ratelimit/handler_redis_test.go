package ratelimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// apiZone is acceptance 1's policy: token bucket, 100 per minute per API key.
func apiHandler(cfg *redispool.Config) *Handler {
	return &Handler{
		Zones: []*Zone{zone("api", 100, time.Minute)},
		Redis: cfg,
		// Generous under -race on shared cores; a failure would answer 503,
		// never let a request through.
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
}

// oneKeyBurst sends 500 concurrent requests with one API key, spread over
// the handlers, and checks exactly 100 pass and 400 get 429.
//
// The bucket refills one token every 600ms (100 per minute), so a burst
// that the store sees over more than 600ms rightly lets a 101st request
// through. The requests are held at a barrier and sent together; should a
// loaded test machine still spread them over a refill interval (measured
// with the store's clock), the burst is repeated with a fresh key.
func oneKeyBurst(t *testing.T, hs ...*Handler) {
	t.Helper()
	const refill = time.Minute / 100
	bases := make([]limiter.Store, len(hs))
	for i, h := range hs {
		bases[i] = h.store
	}
	for attempt := 1; ; attempt++ {
		next := new(statusHandler)
		key := "key-" + testenv.RandomID(4)
		barrier := newBarrier(500)
		span := new(spanRecorder)
		for i, h := range hs {
			warmUp(t, h, limiter.StoreKey(h.prefix, "api", "", key), 500/len(hs))
			h.store = barrierStore{Store: spanStore{Store: bases[i], rec: span}, wg: barrier}
		}
		counts := concurrently(t, 500, func(i int) int {
			return do(hs[i%len(hs)], next, get("/v1/items", "X-API-Key", key)).status
		})
		for i, h := range hs {
			h.store = bases[i]
		}
		if d := span.span(); d >= refill && attempt < 3 {
			t.Logf("attempt %d: the store saw the burst over %v, more than one refill interval; again", attempt, d)
			continue
		}
		if counts[http.StatusOK] != 100 || counts[http.StatusTooManyRequests] != 400 || len(counts) != 2 {
			t.Errorf("statuses = %v, want exactly 100×200 and 400×429 (store saw the burst over %v)", counts, span.span())
		}
		if next.Calls() != counts[http.StatusOK] {
			t.Errorf("next handler saw %d requests, want %d", next.Calls(), counts[http.StatusOK])
		}
		return
	}
}

// warmUp opens n connections of h's pool, so that a burst of n requests
// is n commands in flight at once rather than rounds of a small pool.
func warmUp(t *testing.T, h *Handler, key string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.client.Exists(context.Background(), key).Err(); err != nil {
				t.Errorf("warm-up ping: %v", err)
			}
		}()
	}
	wg.Wait()
}

func TestHandlerOneKeyBurstRedis(t *testing.T) {
	cfg := sharedRedis(t)
	cfg.PoolSize = 500
	h := apiHandler(cfg)
	provision(t, h)
	before := decisions("api", "refused") + decisions("api", "allowed")
	oneKeyBurst(t, h)
	if got := decisions("api", "refused") + decisions("api", "allowed") - before; got < 500 || int(got)%500 != 0 {
		t.Errorf("decisions_total{zone=api} grew by %v, want one decision per request", got)
	}
}

// Three Caddy nodes: three handlers with their own Redis clients (the pool
// shares a client per connection config, so the configs differ in pool size).
func TestHandlerOneKeyBurstThreeNodes(t *testing.T) {
	cfg := sharedRedis(t)
	var hs []*Handler
	for i := range 3 {
		c := *cfg
		c.PoolSize = 170 + i
		h := apiHandler(&c)
		provision(t, h)
		hs = append(hs, h)
	}
	if hs[0].client.UniversalClient == hs[1].client.UniversalClient {
		t.Fatal("handlers share one client; want one per node")
	}
	oneKeyBurst(t, hs...)
}

func TestHandlerOneKeyBurstCluster(t *testing.T) {
	_, prefix := testenv.RedisCluster(t)
	h := apiHandler(&redispool.Config{Addresses: testenv.RedisClusterAddrs(t), KeyPrefix: prefix, PoolSize: 500})
	provision(t, h)
	oneKeyBurst(t, h)
}

// Two zones on a cluster with a hash tag: one slot, one atomic call.
func TestHandlerTwoZonesClusterHashTag(t *testing.T) {
	_, prefix := testenv.RedisCluster(t)
	h := &Handler{
		Zones: []*Zone{
			zone("per_key", 2, time.Minute),
			{Name: "per_tenant", Key: "{http.request.header.X-Tenant}", Events: 3, Window: caddy.Duration(time.Minute)},
		},
		Redis:   &redispool.Config{Addresses: testenv.RedisClusterAddrs(t), KeyPrefix: prefix},
		HashTag: "{http.request.header.X-Tenant}",
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h)
	twoZones(t, h)
}

// Two zones on a cluster without a hash tag: one call per slot, and the
// slots that charged are refunded when another refuses.
func TestHandlerTwoZonesClusterNoHashTag(t *testing.T) {
	_, prefix := testenv.RedisCluster(t)
	h := twoZoneHandler()
	h.Redis = &redispool.Config{Addresses: testenv.RedisClusterAddrs(t), KeyPrefix: prefix}
	provision(t, h)
	twoZones(t, h)
}

// Acceptance 2: after the bucket is empty, Retry-After and the RateLimit t
// parameter are the real wait, rounded up: 2 per 10s is one token every 5s.
func TestHandlerRetryAfterIsRealWaitRedis(t *testing.T) {
	h := &Handler{
		Zones:   []*Zone{zone("slow", 2, 10*time.Second)},
		Redis:   sharedRedis(t),
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h)
	next := new(statusHandler)
	for i := range 2 {
		if s := do(h, next, get("/", "X-API-Key", "k")).status; s != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i+1, s)
		}
	}
	res := do(h, next, get("/", "X-API-Key", "k"))
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("3rd request: status %d, want 429", res.status)
	}
	// Less than 5s has passed since the first request took its token, more
	// than 4s remains: the wait rounds up to 5.
	if got := res.header.Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After = %q, want 5", got)
	}
	if got := res.header.Get("RateLimit"); got != `"slow";r=0;t=5` {
		t.Errorf("RateLimit = %q, want %q", got, `"slow";r=0;t=5`)
	}
	reset, _ := strconv.ParseInt(res.header.Get("X-RateLimit-Reset"), 10, 64)
	if d := time.Until(time.Unix(reset, 0)); d < 4*time.Second || d > 6*time.Second {
		t.Errorf("X-RateLimit-Reset is %v away, want about 5s", d)
	}

	// With a 1s window the wait is short enough to take: 1 per second.
	h2 := &Handler{
		Zones:   []*Zone{zone("fast", 1, time.Second)},
		Redis:   sharedRedis(t),
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h2)
	do(h2, next, get("/", "X-API-Key", "k"))
	res = do(h2, next, get("/", "X-API-Key", "k"))
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "1" {
		t.Fatalf("2nd request: status %d Retry-After %q, want 429 and 1", res.status, res.header.Get("Retry-After"))
	}
	time.Sleep(time.Second)
	if s := do(h2, next, get("/", "X-API-Key", "k")).status; s != http.StatusOK {
		t.Errorf("after waiting Retry-After: status %d, want 200", s)
	}
}

// Acceptance 2: at 10 tokens/s, 1s after the bucket is empty exactly 10 of
// 50 concurrent requests pass (memory store, injected clock: exact).
func TestHandlerRefillTenOfFifty(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("ten", 10, time.Second)}}
	c := memoryHandler(t, h)
	next := new(statusHandler)
	send := func(int) int { return do(h, next, get("/", "X-API-Key", "k")).status }
	if counts := concurrently(t, 50, send); counts[http.StatusOK] != 10 {
		t.Fatalf("first burst: %v, want 10 passed", counts)
	}
	c.Add(time.Second)
	if counts := concurrently(t, 50, send); counts[http.StatusOK] != 10 || counts[http.StatusTooManyRequests] != 40 {
		t.Errorf("after 1s: %v, want exactly 10×200 and 40×429", counts)
	}
}

// storeRemaining reads a zone's state for key without taking anything.
func storeRemaining(t *testing.T, h *Handler, z *Zone, hashTag, key string) int64 {
	t.Helper()
	res, err := h.store.Decide(context.Background(), []limiter.Ask{{Key: limiter.StoreKey(h.prefix, z.Name, hashTag, key), Limit: z.limit, Cost: 0}})
	if err != nil {
		t.Fatalf("reading %s: %v", z.Name, err)
	}
	return res[0].Remaining
}

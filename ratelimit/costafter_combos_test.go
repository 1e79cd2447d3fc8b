package ratelimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// headersBackend answers 200 with fixed response headers.
type headersBackend map[string]string

func (b headersBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	for k, v := range b {
		w.Header().Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// scriptCalls is the calls of Lua (FCALL, EVALSHA and EVAL) a Redis has served.
func scriptCalls(t *testing.T, c redis.UniversalClient) int {
	calls := testenv.CommandCalls(t, c)
	return calls["fcall"] + calls["evalsha"] + calls["eval"]
}

// TestCostAfterSeveralZonesRoundTrips: on a Redis of the test's own,
// two cost_after zones, a plain zone and a concurrency zone of one
// request are admitted in one script call and settled, leases given back
// with them, in one more; a request whose real cost is what it was
// charged and which holds no lease costs the one call only (INFO
// commandstats). Each zone is charged its own real cost.
func TestCostAfterSeveralZonesRoundTrips(t *testing.T) {
	srv := testenv.StartRedis(t)
	cfg := &redispool.Config{URL: srv.URL(), KeyPrefix: "rt"}
	in := tokenZone(limiter.FixedWindow, 1000, time.Hour)
	out := tokenZone(limiter.FixedWindow, 500, time.Hour)
	out.Name, out.CostAfter = "out", &CostAfter{Template: "{http.response.header.X-Out-Used}"}
	plain := zone("requests", 100, time.Hour)
	plain.Algorithm = limiter.FixedWindow
	inflight := &Zone{Name: "inflight", Key: "{http.request.header.X-API-Key}", Events: 4, Algorithm: limiter.Concurrency}
	h := costAfterHandler(cfg, in, out, plain, inflight)
	provision(t, h)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { admin.Close() })

	send := func(h *Handler, n int, usage headersBackend) int {
		t.Helper()
		before := scriptCalls(t, admin)
		for i := range n {
			if res := do(h, usage, get("/", "X-API-Key", "k")); res.status != http.StatusOK {
				t.Fatalf("request %d: status %d", i, res.status)
			}
		}
		return scriptCalls(t, admin) - before
	}
	send(h, 1, headersBackend{"X-Tokens-Used": "100", "X-Out-Used": "50"}) // loads the scripts
	if calls := send(h, 3, headersBackend{"X-Tokens-Used": "100", "X-Out-Used": "50"}); calls != 6 {
		t.Errorf("3 requests with real costs and a lease: %d script calls, want 6 (admit, then settle and give back)", calls)
	}
	for _, tc := range []struct {
		z    *Zone
		want int64
	}{{in, 600}, {out, 300}} {
		probe := costAfterHandler(cfg, &Zone{Name: tc.z.Name, Key: tc.z.Key, Events: tc.z.Events, Window: tc.z.Window,
			Algorithm: tc.z.Algorithm, CostAfter: &CostAfter{Template: "{http.response.header.X-Tokens-Used}"}})
		provision(t, probe)
		if got := remaining(t, probe, "k"); got != tc.want {
			t.Errorf("zone %s: %d left, want %d", tc.z.Name, got, tc.want)
		}
	}
	res := do(h, headersBackend{"X-Tokens-Used": "1", "X-Out-Used": "1"}, get("/", "X-API-Key", "k"))
	if got := res.header.Get("X-RateLimit-Remaining"); got != "3" { // inflight: 4 free again, 1 taken now
		t.Errorf("X-RateLimit-Remaining %q, want 3: the zone with the least left is inflight, every lease given back", got)
	}

	in2, out2 := tokenZone(limiter.FixedWindow, 1000, time.Hour), tokenZone(limiter.FixedWindow, 500, time.Hour)
	in2.Name, out2.Name = "in2", "out2"
	out2.CostAfter = &CostAfter{Template: "{http.response.header.X-Out-Used}"}
	h2 := costAfterHandler(cfg, in2, out2)
	provision(t, h2)
	if calls := send(h2, 5, headersBackend{"X-Tokens-Used": "1", "X-Out-Used": "1"}); calls != 5 {
		t.Errorf("5 requests charged their real cost at admission: %d script calls, want 5", calls)
	}
}

// TestCostAfterApproximate: an approximate zone counts the difference in
// process and sends it with its next sync: one instance admits exactly
// what the real costs allow, and Redis is charged all of it.
func TestCostAfterApproximate(t *testing.T) {
	cfg := sharedRedis(t)
	z := tokenZone(limiter.TokenBucket, 1000, time.Hour)
	z.Approximate = caddy.Duration(20 * time.Millisecond)
	h := costAfterHandler(cfg, z)
	provision(t, h)
	key := "k-" + testenv.RandomID(4)
	counts := map[int]int{}
	for range 15 {
		counts[do(h, &usageBackend{cost: fixedUsage("100")}, get("/", "X-API-Key", key)).status]++
	}
	if counts[http.StatusOK] != 10 || counts[http.StatusTooManyRequests] != 5 {
		t.Errorf("15 requests of 100 tokens against 1000: %v, want 10×200 5×429", counts)
	}
	z.approx.sync(false)
	left := redisTokens(t, h.client.UniversalClient, limiter.StoreKey(cfg.KeyPrefix, z.Name, "", key), z.limit)
	if left > 1 {
		t.Errorf("Redis holds %.2f tokens after the sync, want about 0: every real cost charged", left)
	}
}

// TestCostAfterPlans: a plan's quota is what the real costs are charged
// against; a key without a plan gets the zone's.
func TestCostAfterPlans(t *testing.T) {
	dsn := testenv.Postgres(t)
	exec := plansDB(t, dsn)
	exec(`INSERT INTO ratelimit_plans VALUES ('gold', 500, 3600, NULL)`)
	z := tokenZone(limiter.FixedWindow, 200, time.Hour)
	z.Plans = &Plans{Postgres: dsn, PlanKey: "{http.request.header.X-Plan}"}
	h := costAfterHandler(sharedRedis(t), z)
	provision(t, h)
	for _, tc := range []struct {
		plan string
		want int
	}{{"gold", 5}, {"bronze", 2}} {
		ok := 0
		for range 8 {
			res := do(h, &usageBackend{cost: fixedUsage("100")}, get("/", "X-API-Key", "k-"+tc.plan, "X-Plan", tc.plan))
			if res.status == http.StatusOK {
				ok++
			}
		}
		if ok != tc.want {
			t.Errorf("plan %s: %d of 8 requests of 100 tokens admitted, want %d", tc.plan, ok, tc.want)
		}
	}
}

// TestCostAfterBrake: under the brake the real costs are charged against
// the braked quota.
func TestCostAfterBrake(t *testing.T) {
	z := tokenZone(limiter.FixedWindow, 1000, time.Hour)
	h := costAfterHandler(sharedRedis(t), z)
	provision(t, h)
	if st, body := adminDo(t, http.MethodPut, "/ratelimit/brake", `{"factor": 0.5, "ttl": "10m"}`); st != http.StatusOK {
		t.Fatalf("PUT brake: %d %s", st, body)
	}
	t.Cleanup(func() { adminDo(t, http.MethodDelete, "/ratelimit/brake", "") })
	ok := 0
	for i := range 8 {
		res := do(h, &usageBackend{cost: fixedUsage("100")}, get("/", "X-API-Key", "k"))
		if res.status == http.StatusOK {
			ok++
		} else if i == 5 {
			if q := res.header.Get("X-RateLimit-Limit"); q != strconv.Itoa(500) {
				t.Errorf("X-RateLimit-Limit %q under the brake, want 500", q)
			}
		}
	}
	if ok != 5 {
		t.Errorf("%d of 8 requests of 100 tokens admitted under brake 0.5 of 1000, want 5", ok)
	}
}

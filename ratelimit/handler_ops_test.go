package ratelimit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// policyQ is the q of the RateLimit-Policy item of zone in res.
func policyQ(t *testing.T, res response, zone string) int64 {
	t.Helper()
	for _, item := range strings.Split(res.header.Get("RateLimit-Policy"), ", ") {
		name, params, _ := strings.Cut(item, ";")
		if name != strconv.Quote(zone) {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			if v, ok := strings.CutPrefix(p, "q="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
	}
	t.Fatalf("no RateLimit-Policy item for %q in %q (status %d)", zone, res.header.Get("RateLimit-Policy"), res.status)
	return 0
}

// rateLimitR is the r of the RateLimit header.
func rateLimitR(t *testing.T, res response) int64 {
	t.Helper()
	_, after, ok := strings.Cut(res.header.Get("RateLimit"), ";r=")
	if !ok {
		t.Fatalf("no RateLimit r in %q", res.header.Get("RateLimit"))
	}
	v, _, _ := strings.Cut(after, ";")
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

func TestDynamicQuotaFromPlaceholders(t *testing.T) {
	z := &Zone{Name: "dyn", Key: "{http.request.header.X-API-Key}",
		Dynamic: &DynamicQuota{Events: "{http.request.header.X-Events}", Window: "{http.request.header.X-Window}"}}
	h := &Handler{Zones: []*Zone{z}}
	logs := provision(t, h)
	next := new(statusHandler)

	send := func(key, events, window string) response {
		return do(h, next, get("/", "X-API-Key", key, "X-Events", events, "X-Window", window))
	}
	for i := range 3 {
		res := send("a", "3", "1h")
		if res.status != http.StatusOK || policyQ(t, res, "dyn") != 3 {
			t.Fatalf("request %d: status %d policy %q, want 200 with q=3", i, res.status, res.header.Get("RateLimit-Policy"))
		}
		if got := res.header.Get("X-RateLimit-Limit"); got != "3" {
			t.Errorf("X-RateLimit-Limit = %q, want 3", got)
		}
	}
	if res := send("a", "3", "1h"); res.status != http.StatusTooManyRequests {
		t.Errorf("4th request: status %d, want 429", res.status)
	}
	// Another key with another quota.
	if res := send("a2", "10", "1h"); res.status != http.StatusOK || policyQ(t, res, "dyn") != 10 || rateLimitR(t, res) != 9 {
		t.Errorf("with events 10: status %d, policy %q", res.status, res.header.Get("RateLimit-Policy"))
	}

	// A value that is not a number is a logged 500, never a bypass.
	calls := next.Calls()
	for _, tt := range []struct{ events, window string }{{"", "1h"}, {"lots", "1h"}, {"0", "1h"}, {"5", "soon"}, {"5", ""}} {
		res := send("b", tt.events, tt.window)
		if res.status != http.StatusInternalServerError {
			t.Errorf("events %q window %q: status %d, want 500", tt.events, tt.window, res.status)
		}
	}
	if next.Calls() != calls {
		t.Errorf("a request with an invalid quota reached the next handler")
	}
	if n := logs.FilterMessage("rate limit quota").Len(); n != 5 {
		t.Errorf("%d quota errors logged, want 5", n)
	}
}

func TestPlansHandler(t *testing.T) {
	dsn := testenv.Postgres(t)
	exec := plansDB(t, dsn)
	exec(`INSERT INTO ratelimit_plans VALUES ('gold', 5, 3600, NULL), ('silver', 10, 3600, NULL)`)
	const refresh = 200 * time.Millisecond
	z := &Zone{Name: "plans", Key: "{http.request.header.X-API-Key}", Events: 2, Window: caddy.Duration(time.Hour),
		Plans: &Plans{Postgres: dsn, Refresh: caddy.Duration(refresh), PlanKey: "{http.request.header.X-Plan}"}}
	h := &Handler{Zones: []*Zone{z}, Redis: sharedRedis(t), Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
	provision(t, h)
	next := new(statusHandler)
	send := func(key, plan string) response {
		return do(h, next, get("/", "X-API-Key", key, "X-Plan", plan))
	}

	// gold: 5 an hour; an unknown plan: the zone's 2.
	counts := map[int]int{}
	for range 7 {
		res := send("k-gold", "gold")
		counts[res.status]++
		if q := policyQ(t, res, "plans"); q != 5 {
			t.Errorf("gold: q=%d, want 5", q)
		}
	}
	if counts[200] != 5 || counts[429] != 2 {
		t.Errorf("gold: statuses %v, want 5×200 2×429", counts)
	}
	// 200 concurrent requests of one gold key: exactly its 5 pass.
	burst := concurrently(t, 200, func(int) int { return send("k-gold-burst", "gold").status })
	if burst[200] != 5 || burst[429] != 195 {
		t.Errorf("200 concurrent gold requests: %v, want 5×200 195×429", burst)
	}
	if res := send("k-none", "bronze"); policyQ(t, res, "plans") != 2 {
		t.Errorf("unknown plan: q=%d, want the zone's 2", policyQ(t, res, "plans"))
	}

	// silver 10 → 3 in the table: picked up within one refresh, no reload,
	// and the key's stored tokens are capped to the new capacity.
	if res := send("k-silver", "silver"); res.status != 200 || rateLimitR(t, res) != 9 {
		t.Fatalf("silver: status %d remaining %d, want 200 and 9", res.status, rateLimitR(t, res))
	}
	exec(`UPDATE ratelimit_plans SET events = 3 WHERE plan_key = 'silver'`)
	start := time.Now()
	waitFor(t, refresh+2*time.Second, "silver plan lowered", func() bool {
		return z.quota.plans.lookupEvents("silver") == 3
	})
	t.Logf("plan change visible after %v (refresh %v)", time.Since(start), refresh)
	res := send("k-silver", "silver")
	if res.status != 200 || policyQ(t, res, "plans") != 3 || rateLimitR(t, res) != 2 {
		t.Errorf("silver after the change: status %d q=%d remaining %d, want 200, q=3, 2 left (capped to 3, minus 1)",
			res.status, policyQ(t, res, "plans"), rateLimitR(t, res))
	}
}

// TestBrakeOnThreeInstances: three handlers provisioned separately on one
// Redis (three Caddy nodes). A brake set through the admin API applies at
// once in this process; one set by another node reaches all three within
// a second; clearing it restores the quotas.
func TestBrakeOnThreeInstances(t *testing.T) {
	cfg := sharedRedis(t)
	var hs []*Handler
	for range 3 {
		h := &Handler{Zones: []*Zone{zone("braked", 100, time.Hour)}, Redis: cfg,
			Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
		provision(t, h)
		hs = append(hs, h)
	}
	next := new(statusHandler)
	quotas := func() []int64 {
		var qs []int64
		for _, h := range hs {
			qs = append(qs, policyQ(t, do(h, next, get("/", "X-API-Key", "k")), "braked"))
		}
		return qs
	}
	all := func(q int64) func() bool {
		return func() bool {
			for _, got := range quotas() {
				if got != q {
					return false
				}
			}
			return true
		}
	}
	if !all(100)() {
		t.Fatalf("quotas before the brake = %v, want 100", quotas())
	}

	st, body := adminDo(t, http.MethodPut, "/ratelimit/brake", `{"factor": 0.1, "ttl": "10m"}`)
	if st != http.StatusOK {
		t.Fatalf("PUT brake: %d %s", st, body)
	}
	if !all(10)() {
		t.Errorf("quotas right after PUT /ratelimit/brake = %v, want 10", quotas())
	}
	if g := brakeGaugeValue(); g != 0.1 {
		t.Errorf("caddy_ratelimit_brake_factor = %v, want 0.1", g)
	}
	if ttl := redisTTL(t, cfg.KeyPrefix+":brake"); ttl <= 9*time.Minute || ttl > 10*time.Minute {
		t.Errorf("brake TTL = %v, want about 10m", ttl)
	}

	// 300 concurrent requests of one key over the three instances:
	// exactly the braked 10 pass.
	burst := concurrently(t, 300, func(i int) int {
		return do(hs[i%3], next, get("/", "X-API-Key", "burst")).status
	})
	if burst[200] != 10 || burst[429] != 290 {
		t.Errorf("300 concurrent requests under the brake: %v, want 10×200 290×429", burst)
	}

	// Another node sets 0.5 in Redis: every instance follows within 1s.
	other := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	t.Cleanup(func() { other.Close() })
	if err := newRedisBrake(other, cfg.KeyPrefix).set(context.Background(), 0.5, time.Minute); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 3*time.Second, "brake 0.5 on three instances", all(50))
	if took > time.Second+200*time.Millisecond {
		t.Errorf("brake reached every instance after %v, want within 1s", took)
	}

	if st, body := adminDo(t, http.MethodDelete, "/ratelimit/brake", ""); st != http.StatusOK {
		t.Fatalf("DELETE brake: %d %s", st, body)
	}
	if !all(100)() {
		t.Errorf("quotas after DELETE /ratelimit/brake = %v, want 100", quotas())
	}
	if g := brakeGaugeValue(); g != 1 {
		t.Errorf("caddy_ratelimit_brake_factor = %v, want 1", g)
	}
}

func TestBrakeInProcess(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("local_brake", 20, time.Hour)}}
	logs := provision(t, h)
	t.Cleanup(func() { _ = processBrake.clear(context.Background()) })
	if st, body := adminDo(t, http.MethodPut, "/ratelimit/brake", `{"factor": 0.25}`); st != http.StatusOK {
		t.Fatalf("PUT brake: %d %s", st, body)
	}
	next := new(statusHandler)
	counts := map[int]int{}
	for range 8 {
		res := do(h, next, get("/", "X-API-Key", "k"))
		counts[res.status]++
		if q := policyQ(t, res, "local_brake"); q != 5 {
			t.Errorf("q = %d, want 5 (20 × 0.25)", q)
		}
	}
	if counts[200] != 5 || counts[429] != 3 {
		t.Errorf("statuses under the brake = %v, want 5×200 3×429", counts)
	}

	// The refusal log explains it: zone, outcome, what is left, the rule.
	refusals := logs.FilterMessage("rate limit exceeded").All()
	if len(refusals) != 3 {
		t.Fatalf("%d refusals logged, want 3", len(refusals))
	}
	f := refusals[0].ContextMap()
	want := map[string]any{"zone": "local_brake", "outcome": "refused", "remaining": int64(0),
		"algorithm": limiter.TokenBucket, "events": int64(5), "window": time.Hour, "quota": "static", "brake": 0.25}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("refusal log %s = %v (%T), want %v", k, f[k], f[k], v)
		}
	}
	if _, ok := f["key"]; ok {
		t.Error("refusal log has the key without log_keys")
	}
}

func TestAdminInspectAndReset(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("inspect", 5, time.Hour)}, Redis: sharedRedis(t),
		Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
	provision(t, h)
	next := new(statusHandler)
	const key = "user/42:{x}" // escaped in the path
	path := "/ratelimit/zones/inspect/keys/" + "user%2F42:%7Bx%7D"
	send := func() response { return do(h, next, get("/", "X-API-Key", key)) }
	inspect := func() keyState {
		t.Helper()
		st, body := adminDo(t, http.MethodGet, path, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, st, body)
		}
		var states []keyState
		if err := json.Unmarshal(body, &states); err != nil || len(states) != 1 {
			t.Fatalf("GET %s: %s (%v), want one state", path, body, err)
		}
		return states[0]
	}

	if s := inspect(); s.Remaining != 5 || !s.Allowed || s.Events != 5 || s.Quota != "static" {
		t.Errorf("fresh key: %+v, want 5 of 5 left", s)
	}
	for range 2 {
		send()
	}
	// Inspecting charges nothing, and matches what the next request sees.
	for range 3 {
		if s := inspect(); s.Remaining != 3 {
			t.Errorf("after 2 requests: remaining %d, want 3", s.Remaining)
		}
	}
	if res := send(); rateLimitR(t, res) != 2 {
		t.Errorf("next request: r=%d, want 3-1", rateLimitR(t, res))
	}
	for range 2 {
		send()
	}
	s := inspect()
	res := send()
	if s.Allowed || s.Remaining != 0 || res.status != http.StatusTooManyRequests {
		t.Fatalf("exhausted: inspect %+v, next status %d; want refused both", s, res.status)
	}
	if got := res.header.Get("Retry-After"); got != strconv.FormatInt(s.RetryAfter, 10) {
		t.Errorf("inspect retry_after %d, next request Retry-After %s", s.RetryAfter, got)
	}

	// Reset restores the full quota.
	if st, body := adminDo(t, http.MethodDelete, path, ""); st != http.StatusOK {
		t.Fatalf("DELETE: %d %s", st, body)
	}
	if s := inspect(); s.Remaining != 5 || !s.Allowed {
		t.Errorf("after reset: %+v, want 5 left", s)
	}
	counts := map[int]int{}
	for range 6 {
		counts[send().status]++
	}
	if counts[200] != 5 || counts[429] != 1 {
		t.Errorf("after reset: %v, want 5×200 1×429", counts)
	}

	// The zone list shows the zone with its config.
	st, body := adminDo(t, http.MethodGet, "/ratelimit/zones", "")
	var zones []zoneInfo
	if st != http.StatusOK || json.Unmarshal(body, &zones) != nil {
		t.Fatalf("GET zones: %d %s", st, body)
	}
	found := false
	for _, z := range zones {
		if z.Name == "inspect" {
			found = z.Events == 5 && z.Window == "1h0m0s" && z.Store == "redis" && z.Algorithm == limiter.TokenBucket
		}
	}
	if !found {
		t.Errorf("GET zones = %s, want zone inspect (5 per 1h, redis)", body)
	}

	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/ratelimit/zones/nope/keys/k", http.StatusNotFound},
		{http.MethodGet, "/ratelimit/zones/inspect", http.StatusNotFound},
		{http.MethodPost, path, http.StatusMethodNotAllowed},
		{http.MethodPost, "/ratelimit/brake", http.StatusMethodNotAllowed},
		{http.MethodGet, "/ratelimit/other", http.StatusNotFound},
	} {
		if st, body := adminDo(t, tt.method, tt.path, ""); st != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, st, body, tt.status)
		}
	}
	for _, bad := range []string{`{"factor": 0}`, `{"factor": 1.5}`, `{"factor": 0.5, "ttl": "-1m"}`, `{"factr": 0.5}`, `nope`} {
		if st, body := adminDo(t, http.MethodPut, "/ratelimit/brake", bad); st != http.StatusBadRequest {
			t.Errorf("PUT brake %s: %d %s, want 400", bad, st, body)
		}
	}
}

func TestAdminInspectPlansAndPlaceholders(t *testing.T) {
	plans := &Zone{Name: "inspect_plans", Key: "{http.request.header.X-API-Key}", Events: 2, Window: caddy.Duration(time.Hour)}
	dyn := &Zone{Name: "inspect_dyn", Key: "{http.request.header.X-API-Key}", Window: caddy.Duration(time.Hour),
		Dynamic: &DynamicQuota{Events: "{http.request.header.X-Events}"}}
	h := &Handler{Zones: []*Zone{plans, dyn}}
	provision(t, h)
	// A plans table without PostgreSQL: the key itself is the plan key.
	plans.quota = &zoneQuota{zone: plans.Name, base: plans.limit, planKey: plans.Key,
		plans: staticPlans(map[string]plan{"vip": {events: 50, window: time.Hour}})}
	plans.quota.prepare()

	get := func(path string) (int, keyState) {
		st, body := adminDo(t, http.MethodGet, path, "")
		var states []keyState
		_ = json.Unmarshal(body, &states)
		if len(states) == 0 {
			return st, keyState{}
		}
		return st, states[0]
	}
	if st, s := get("/ratelimit/zones/inspect_plans/keys/vip"); st != 200 || s.Events != 50 || s.Quota != "plan" {
		t.Errorf("plan key vip: %d %+v, want the plan's 50", st, s)
	}
	if st, s := get("/ratelimit/zones/inspect_plans/keys/other"); st != 200 || s.Events != 2 || s.Quota != "static" {
		t.Errorf("no plan: %d %+v, want the zone's 2", st, s)
	}
	if st, _ := get("/ratelimit/zones/inspect_dyn/keys/k"); st != http.StatusBadRequest {
		t.Errorf("placeholder quota without ?events: %d, want 400", st)
	}
	if st, s := get("/ratelimit/zones/inspect_dyn/keys/k?events=7"); st != 200 || s.Events != 7 || s.Remaining != 7 {
		t.Errorf("?events=7: %d %+v", st, s)
	}
}

// adminDo serves one admin API request and returns the status and body,
// with errors as Caddy's admin server turns them into status codes.
func adminDo(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	var api AdminAPI
	err := api.Routes()[0].Handler.ServeHTTP(rec, req)
	var ae caddy.APIError
	if errors.As(err, &ae) {
		b, _ := json.Marshal(ae)
		if ae.Message == "" {
			b, _ = json.Marshal(map[string]string{"error": ae.Err.Error()})
		}
		return ae.HTTPStatus, b
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return rec.Code, bytes.TrimSpace(rec.Body.Bytes())
}

func brakeGaugeValue() float64 {
	var m dto.Metric
	_ = brakeGauge.Write(&m)
	return m.GetGauge().GetValue()
}

func redisTTL(t *testing.T, key string) time.Duration {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	defer c.Close()
	return c.PTTL(context.Background(), key).Val()
}

// Cleanup releases what Provision took once: a second call (Caddy may
// clean up a handler whose Provision failed, then again) is harmless.
func TestCleanupTwice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"memory", false}, {"redis", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Zones: []*Zone{{Name: "api", Key: "{client_ip}", Events: 5, Window: caddy.Duration(time.Second), Approximate: caddy.Duration(100 * time.Millisecond)}}}
			if tc.redis {
				h.Redis = sharedRedis(t)
			}
			states0, loads0 := carriedSize()
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			if err := h.Provision(ctx); err != nil {
				t.Fatalf("Provision: %v", err)
			}
			for i := range 2 {
				if err := h.Cleanup(); err != nil {
					t.Errorf("Cleanup %d: %v", i+1, err)
				}
			}
			if states, loads := carriedSize(); states != states0 || loads != loads0 {
				t.Errorf("after Cleanup: %d zone states, %d loads held, want %d, %d as before", states, loads, states0, loads0)
			}
		})
	}
}

package ratelimit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// twoZones checks acceptance 4 on h (zones per_key: 2/min by X-API-Key,
// per_tenant: 3/min by X-Tenant): a request refused by one zone charges
// neither.
func twoZones(t *testing.T, h *Handler) {
	t.Helper()
	next := new(statusHandler)
	req := func(key, tenant string) response {
		return do(h, next, get("/", "X-API-Key", key, "X-Tenant", tenant))
	}
	tag := func(tenant string) string {
		if h.HashTag == "" {
			return ""
		}
		return tenant
	}
	perKey, perTenant := h.Zones[0], h.Zones[1]

	// Key a takes 2 of tenant t's 3; its 3rd is refused by per_key...
	for i := range 2 {
		if s := req("a", "t").status; s != http.StatusOK {
			t.Fatalf("a #%d: status %d, want 200", i+1, s)
		}
	}
	res := req("a", "t")
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("a #3: status %d, want 429", res.status)
	}
	if z, _ := res.repl.GetString("http.ratelimit.zone"); z != "per_key" {
		t.Errorf("a #3 refused by %q, want per_key", z)
	}
	// ...and did not charge per_tenant.
	if got := storeRemaining(t, h, perTenant, tag("t"), "t"); got != 1 {
		t.Errorf("per_tenant remaining = %d, want 1", got)
	}

	// Key b takes the tenant's last unit; its 2nd is refused by per_tenant
	// and leaves per_key for b with 1.
	if s := req("b", "t").status; s != http.StatusOK {
		t.Fatalf("b #1: status %d, want 200", s)
	}
	res = req("b", "t")
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("b #2: status %d, want 429", res.status)
	}
	if z, _ := res.repl.GetString("http.ratelimit.zone"); z != "per_tenant" {
		t.Errorf("b #2 refused by %q, want per_tenant", z)
	}
	if got := storeRemaining(t, h, perKey, tag("t"), "b"); got != 1 {
		t.Errorf("per_key remaining for b = %d, want 1", got)
	}
	if next.Calls() != 3 {
		t.Errorf("next saw %d requests, want 3", next.Calls())
	}
}

func twoZoneHandler() *Handler {
	return &Handler{
		Zones: []*Zone{
			zone("per_key", 2, time.Minute),
			{Name: "per_tenant", Key: "{http.request.header.X-Tenant}", Events: 3, Window: caddy.Duration(time.Minute)},
		},
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
}

func TestHandlerTwoZonesRedis(t *testing.T) {
	h := twoZoneHandler()
	h.Redis = sharedRedis(t)
	provision(t, h)
	twoZones(t, h)
}

func TestHandlerTwoZonesMemory(t *testing.T) {
	h := twoZoneHandler()
	memoryHandler(t, h)
	twoZones(t, h)
}

// Acceptance 5: with count_status 401, failed logins are limited and
// successful ones take nothing; an exhausted zone refuses even a request
// that would succeed.
func TestHandlerCountStatus(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			h := &Handler{
				Zones: []*Zone{{Name: "login", Key: "{http.request.header.X-User}", Events: 3,
					Window: caddy.Duration(time.Minute), Algorithm: limiter.SlidingLog, CountStatus: []int{401}}},
				Timeout: caddy.Duration(5 * time.Second),
				OnError: "closed",
			}
			if backend == "redis" {
				h.Redis = sharedRedis(t)
				provision(t, h)
			} else {
				memoryHandler(t, h)
			}
			ok := &statusHandler{status: http.StatusOK}
			for i := range 10 {
				if s := do(h, ok, get("/login", "X-User", "bob")).status; s != http.StatusOK {
					t.Fatalf("successful login %d: status %d, want 200", i+1, s)
				}
			}
			if got := storeRemaining(t, h, h.Zones[0], "", "bob"); got != 3 {
				t.Fatalf("after 10 successful logins remaining = %d, want 3", got)
			}
			// Failed logins: one written by the next handler, two returned
			// as errors like basic_auth does.
			bad := &statusHandler{status: http.StatusUnauthorized}
			if s := do(h, bad, get("/login", "X-User", "bob")).status; s != http.StatusUnauthorized {
				t.Fatalf("failed login: status %d, want 401", s)
			}
			authErr := &statusHandler{err: caddyhttp.Error(http.StatusUnauthorized, nil)}
			for range 2 {
				if s := do(h, authErr, get("/login", "X-User", "bob")).status; s != http.StatusUnauthorized {
					t.Fatalf("failed login: status %d, want 401", s)
				}
			}
			res := do(h, bad, get("/login", "X-User", "bob"))
			if res.status != http.StatusTooManyRequests {
				t.Fatalf("4th failed login: status %d, want 429", res.status)
			}
			if s := do(h, ok, get("/login", "X-User", "bob")).status; s != http.StatusTooManyRequests {
				t.Errorf("correct password after 3 failures: status %d, want 429", s)
			}
			if s := do(h, ok, get("/login", "X-User", "alice")).status; s != http.StatusOK {
				t.Errorf("another user: status %d, want 200", s)
			}
			if bad.Calls() != 1 || authErr.Calls() != 2 {
				t.Errorf("next saw %d + %d failed logins, want 1 + 2", bad.Calls(), authErr.Calls())
			}
		})
	}
}

// Acceptance 7: dry_run never refuses, but reports in headers, logs and
// metrics; the enforcing zones beside it still take their quota.
func TestHandlerDryRun(t *testing.T) {
	for _, backend := range []string{"memory", "redis"} {
		t.Run(backend, func(t *testing.T) {
			dryName := "dry-" + backend
			h := &Handler{
				Zones: []*Zone{
					{Name: dryName, Key: "{http.request.header.X-API-Key}", Events: 2, Window: caddy.Duration(time.Minute), DryRun: true},
					zone("enforced-"+backend, 4, time.Minute),
				},
				Timeout: caddy.Duration(5 * time.Second),
				OnError: "closed",
			}
			if backend == "redis" {
				h.Redis = sharedRedis(t)
			} else {
				h.now = newClock().Now
			}
			observed := provision(t, h)
			before := decisions(dryName, "dry_run_refused")
			next := new(statusHandler)
			var statuses []int
			var last response
			for range 5 {
				last = do(h, next, get("/", "X-API-Key", "k"))
				statuses = append(statuses, last.status)
			}
			want := []int{200, 200, 200, 200, 429}
			for i := range want {
				if statuses[i] != want[i] {
					t.Fatalf("statuses = %v, want %v (dry run passes, enforced zone still charged)", statuses, want)
				}
			}
			// Requests 3 to 5 find the dry-run zone exhausted (the 5th is
			// refused by the enforced zone).
			if got := decisions(dryName, "dry_run_refused") - before; got != 3 {
				t.Errorf("dry_run_refused grew by %v, want 3", got)
			}
			if n := observed.FilterMessage("rate limit exceeded (dry run)").Len(); n != 2 {
				t.Errorf("%d dry-run log lines, want 2", n)
			}
			if got := last.header.Get("RateLimit-Policy"); !strings.Contains(got, `"`+dryName+`";q=2;w=60`) {
				t.Errorf("RateLimit-Policy = %q, want the dry-run zone listed", got)
			}
		})
	}
}

func TestHandlerDryRunHeaders(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "d", Key: "k", Events: 1, Window: caddy.Duration(time.Minute), DryRun: true}}}
	c := memoryHandler(t, h)
	next := new(statusHandler)
	do(h, next, get("/"))
	res := do(h, next, get("/"))
	if res.status != http.StatusOK {
		t.Fatalf("status %d, want 200", res.status)
	}
	checkHeaders(t, res.header, map[string]string{
		"RateLimit-Policy":      `"d";q=1;w=60`,
		"RateLimit":             `"d";r=0;t=60`,
		"X-RateLimit-Limit":     "1",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     unix(c, time.Minute),
	})
}

func TestHandlerCost(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "units", Key: "k", Events: 10, Window: caddy.Duration(time.Minute),
		Cost: "{http.request.header.X-Cost}"}}}
	memoryHandler(t, h)
	next := new(statusHandler)
	res := do(h, next, get("/", "X-Cost", "7"))
	if res.status != http.StatusOK || res.header.Get("X-RateLimit-Remaining") != "3" {
		t.Fatalf("cost 7: status %d remaining %q, want 200 and 3", res.status, res.header.Get("X-RateLimit-Remaining"))
	}
	if res = do(h, next, get("/", "X-Cost", "4")); res.status != http.StatusTooManyRequests {
		t.Errorf("cost 4 of 3 Left: status %d, want 429", res.status)
	}
	if res = do(h, next, get("/", "X-Cost", "0")); res.status != http.StatusOK || res.header.Get("X-RateLimit-Remaining") != "3" {
		t.Errorf("cost 0: status %d remaining %q, want 200 and 3 (nothing taken)", res.status, res.header.Get("X-RateLimit-Remaining"))
	}
	calls := next.Calls()
	for _, bad := range []string{"", "lots", "-1", "1.5"} {
		res = do(h, next, get("/", "X-Cost", bad))
		if res.status != http.StatusBadRequest {
			t.Errorf("cost %q: status %d, want 400 (never a bypass)", bad, res.status)
		}
	}
	if next.Calls() != calls {
		t.Errorf("requests with a bad cost reached the next handler")
	}
}

// A key that expands to empty is a key like any other: a missing header
// never bypasses the limit.
func TestHandlerEmptyKeyDoesNotBypass(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("api", 2, time.Minute)}}
	memoryHandler(t, h)
	next := new(statusHandler)
	var statuses []int
	for range 3 {
		statuses = append(statuses, do(h, next, get("/")).status)
	}
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 429 {
		t.Errorf("statuses without the key header = %v, want [200 200 429]", statuses)
	}
}

func TestHandlerZoneMatch(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "writes", Key: "{client_ip}", Events: 1, Window: caddy.Duration(time.Minute),
		MatchRaw: caddy.ModuleMap{"method": []byte(`["POST"]`)}}}}
	memoryHandler(t, h)
	next := new(statusHandler)
	for range 3 {
		res := do(h, next, get("/"))
		if res.status != http.StatusOK || res.header.Get("RateLimit") != "" {
			t.Fatalf("GET: status %d RateLimit %q, want 200 and no headers", res.status, res.header.Get("RateLimit"))
		}
	}
	post := func() int {
		r := get("/")
		r.Method = http.MethodPost
		return do(h, next, r).status
	}
	if a, b := post(), post(); a != 200 || b != 429 {
		t.Errorf("POSTs: %d %d, want 200 429", a, b)
	}
}

func TestHandlerStatusAndLogKeys(t *testing.T) {
	h := &Handler{Status: 503, LogKeys: true, Zones: []*Zone{zone("api", 1, time.Minute)}}
	h.now = newClock().Now
	logs := provision(t, h)
	next := new(statusHandler)
	do(h, next, get("/", "X-API-Key", "secret-1"))
	if s := do(h, next, get("/", "X-API-Key", "secret-1")).status; s != 503 {
		t.Errorf("status %d, want the configured 503", s)
	}
	entries := logs.FilterMessage("rate limit exceeded").All()
	if len(entries) != 1 {
		t.Fatalf("%d refusal log lines, want 1", len(entries))
	}
	f := entries[0].ContextMap()
	if f["zone"] != "api" || f["key"] != "secret-1" {
		t.Errorf("log fields = %v, want zone api and key secret-1", f)
	}

	// Without log_keys the key never reaches the logs.
	h2 := &Handler{Zones: []*Zone{zone("api", 1, time.Minute)}}
	h2.now = newClock().Now
	logs2 := provision(t, h2)
	do(h2, next, get("/", "X-API-Key", "secret-2"))
	do(h2, next, get("/", "X-API-Key", "secret-2"))
	for _, e := range logs2.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, "secret-2") {
				t.Errorf("log %q field %s contains the key", e.Message, k)
			}
		}
	}
}

// leaky_bucket: requests wait their turn (10/s: one every 100ms); a full
// queue refuses; a client that leaves while waiting never reaches next.
func TestHandlerLeakyBucketDelay(t *testing.T) {
	h := &Handler{
		Zones: []*Zone{{Name: "queue", Key: "k", Events: 10, Window: caddy.Duration(time.Second),
			Algorithm: limiter.LeakyBucket, Burst: 2}},
		Redis:   sharedRedis(t),
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h)
	next := new(statusHandler)
	start := time.Now()
	var statuses []int
	for range 4 {
		statuses = append(statuses, do(h, next, get("/")).status)
	}
	elapsed := time.Since(start)
	// First passes at once, the next two wait about 100ms each; the fourth
	// finds two ahead of it... or fewer, if the first ones already left.
	if statuses[0] != 200 || statuses[1] != 200 || statuses[2] != 200 {
		t.Fatalf("statuses = %v, want the first three to pass", statuses)
	}
	if elapsed < 150*time.Millisecond {
		t.Errorf("three queued requests took %v, want them held about 100ms apart", elapsed)
	}

	// Fill the queue, then a cancelled client leaves without reaching next.
	h2 := &Handler{
		Zones: []*Zone{{Name: "slowq", Key: "k", Events: 1, Window: caddy.Duration(10 * time.Second),
			Algorithm: limiter.LeakyBucket, Burst: 5}},
		Redis:   sharedRedis(t),
		Timeout: caddy.Duration(5 * time.Second),
		OnError: "closed",
	}
	provision(t, h2)
	next2 := new(statusHandler)
	if s := do(h2, next2, get("/")).status; s != 200 {
		t.Fatalf("first: status %d, want 200", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	begin := time.Now()
	res := do(h2, next2, get("/").WithContext(ctx))
	if res.status != 499 || next2.Calls() != 1 {
		t.Errorf("cancelled waiter: status %d, next calls %d; want 499 and 1", res.status, next2.Calls())
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("cancelled waiter returned after %v, want soon after its 50ms deadline", d)
	}
}

// The status-capturing wrapper of count_status zones keeps flushing
// (http.ResponseController) working for streaming responses.
func TestHandlerCountStatusKeepsFlusher(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "stream", Key: "k", Events: 5, Window: caddy.Duration(time.Minute), CountStatus: []int{500}}}}
	memoryHandler(t, h)
	rec := httptest.NewRecorder()
	req := caddyhttp.PrepareRequest(get("/"), caddy.NewReplacer(), rec, nil)
	var flushErr error
	next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		_, _ = w.Write([]byte("event: 1\n\n"))
		flushErr = http.NewResponseController(w).Flush()
		return nil
	})
	if err := h.ServeHTTP(rec, req, next); err != nil {
		t.Fatalf("ServeHTTP: %v", err)
	}
	if flushErr != nil || !rec.Flushed {
		t.Errorf("Flush through the wrapper: err %v, flushed %v; want nil, true", flushErr, rec.Flushed)
	}
}

// JSON configs may give cost as a number or as a template string.
func TestHandlerJSONConfig(t *testing.T) {
	var h Handler
	err := json.Unmarshal([]byte(`{
		"zones": [
			{"name": "n", "key": "{http.request.header.X-API-Key}", "events": 5, "window": "1m", "cost": 2},
			{"name": "t", "key": "{http.request.header.X-API-Key}", "events": 50, "window": 60000000000,
			 "cost": "{http.request.header.X-Cost}", "match": {"path": ["/api/*"]}}
		],
		"timeout": "20ms",
		"headers": "legacy"
	}`), &h)
	if err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	memoryHandler(t, &h)
	res := do(&h, new(statusHandler), get("/api/x", "X-API-Key", "k", "X-Cost", "10"))
	if res.status != http.StatusOK || res.header.Get("X-RateLimit-Remaining") != "3" || res.header.Get("X-RateLimit-Limit") != "5" {
		t.Errorf("status %d limit %q remaining %q, want 200, 5 and 3", res.status,
			res.header.Get("X-RateLimit-Limit"), res.header.Get("X-RateLimit-Remaining"))
	}
	if h.timeout != 20*time.Millisecond {
		t.Errorf("timeout = %v, want 20ms", h.timeout)
	}
}

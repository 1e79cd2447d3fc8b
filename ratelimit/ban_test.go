package ratelimit

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"

	"github.com/edgekit/caddy-edgekit/internal/testenv"
	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// banHandlers are n handler instances on the shared Redis (each its own
// client) with one zone: 2 per minute per API key, a ban of 2s after 2
// refusals, at most 3s.
func banHandlers(t *testing.T, n int, edit func(z *Zone)) []*Handler {
	t.Helper()
	cfg := sharedRedis(t)
	var hs []*Handler
	for i := range n {
		c := *cfg
		c.PoolSize = 10 + i // a client of its own
		z := zone("api", 2, time.Minute)
		z.Algorithm = limiter.FixedWindow
		z.Ban, z.BanAfter, z.BanMax = caddy.Duration(2*time.Second), 2, caddy.Duration(3*time.Second)
		if edit != nil {
			edit(z)
		}
		h := &Handler{Zones: []*Zone{z}, Redis: &c, Timeout: caddy.Duration(5 * time.Second), OnError: "closed"}
		provision(t, h)
		hs = append(hs, h)
	}
	return hs
}

// banStateExists reports whether the store holds a ban state for key in
// zone api of h.
func banStateExists(t *testing.T, h *Handler, key string) bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testenv.RedisAddr(t)})
	defer c.Close()
	n, err := c.Exists(context.Background(), limiter.BanKey(limiter.StoreKey(h.prefix, "api", "", key))).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestHandlerBanAcrossInstances: the second refusal of a key within the
// window, on another instance, bans it on both for 2s (Retry-After 2,
// while its window would free it in up to a minute); another key is not
// banned; after the ban the quota is as it was (still used up), and the
// next ban doubles to 4s, capped by ban_max at 3s.
func TestHandlerBanAcrossInstances(t *testing.T) {
	// A fixed window of a minute ends on the clock's minute: started in
	// its last seconds, the first refusal's Retry-After (the window's
	// remainder) could read as the ban's 2s, and the window could turn
	// during the test's 2.5s.
	testenv.AwayFromWindowEnd(t, time.Minute, 5*time.Second)
	hs := banHandlers(t, 3, nil)
	next := new(statusHandler)
	key, other := "k-"+testenv.RandomID(6), "o-"+testenv.RandomID(6)
	send := func(h *Handler, key string) response { return do(h, next, get("/", "X-API-Key", key)) }
	for range 2 {
		if r := send(hs[0], key); r.status != http.StatusOK {
			t.Fatalf("within the quota: status %d", r.status)
		}
	}
	if r := send(hs[0], key); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "2" {
		t.Fatalf("first refusal: status %d, Retry-After %q; want 429 for the window's remainder, no ban", r.status, r.header.Get("Retry-After"))
	}
	if r := send(hs[1], key); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2" {
		t.Fatalf("second refusal: status %d, Retry-After %q; want 429, the 2s ban", r.status, r.header.Get("Retry-After"))
	}
	if r := send(hs[1], key); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "2" {
		t.Fatalf("during the ban: status %d, Retry-After %q; want 429, 2", r.status, r.header.Get("Retry-After"))
	}
	if r := send(hs[0], other); r.status != http.StatusOK {
		t.Fatalf("another key: status %d, want 200", r.status)
	}
	time.Sleep(2100 * time.Millisecond)
	send(hs[1], key) // the window is still used up: offence 1
	if r := send(hs[2], key); r.header.Get("Retry-After") != "3" {
		t.Fatalf("second ban: Retry-After %q, want 3 (4s capped by ban_max)", r.header.Get("Retry-After"))
	}
}

// TestHandlerBanNeverForDryRunOrBadInput: refusals of a dry_run zone and
// requests refused with 400 (a key header sent twice) leave no ban state.
func TestHandlerBanNeverForDryRunOrBadInput(t *testing.T) {
	dry := banHandlers(t, 1, func(z *Zone) { z.DryRun, z.BanAfter = true, 1 })[0]
	next := new(statusHandler)
	key := "d-" + testenv.RandomID(6)
	for range 5 {
		if r := do(dry, next, get("/", "X-API-Key", key)); r.status != http.StatusOK {
			t.Fatalf("dry_run zone: status %d, want 200", r.status)
		}
	}
	if banStateExists(t, dry, key) {
		t.Error("dry_run refusals left a ban state")
	}

	h := banHandlers(t, 1, func(z *Zone) { z.BanAfter = 1 })[0]
	bad := "b-" + testenv.RandomID(6)
	for range 5 {
		req := get("/")
		req.Header.Add("X-API-Key", bad)
		req.Header.Add("X-API-Key", bad)
		if r := do(h, next, req); r.status != http.StatusBadRequest {
			t.Fatalf("key header twice: status %d, want 400", r.status)
		}
	}
	if banStateExists(t, h, bad) {
		t.Error("requests refused with 400 left a ban state")
	}
	if r := do(h, next, get("/", "X-API-Key", bad)); r.status != http.StatusOK {
		t.Errorf("after bad requests: status %d, want 200 (not banned, quota untouched)", r.status)
	}
}

// TestHandlerBanMemory: with the memory store (no redis) the zone
// bans the same way.
func TestHandlerBanMemory(t *testing.T) {
	z := zone("api", 1, time.Minute)
	z.Ban = caddy.Duration(time.Hour)
	h := &Handler{Zones: []*Zone{z}}
	provision(t, h)
	next := new(statusHandler)
	do(h, next, get("/", "X-API-Key", "m"))
	if r := do(h, next, get("/", "X-API-Key", "m")); r.header.Get("Retry-After") != "3600" {
		t.Fatalf("first refusal: Retry-After %q, want the 1h ban (3600)", r.header.Get("Retry-After"))
	}
}

// TestHandlerBanExempt: a client in an exempt network and an exempt key are
// refused by the quota like anyone, never banned; others are.
func TestHandlerBanExempt(t *testing.T) {
	z := zone("api", 1, time.Minute)
	z.Ban = caddy.Duration(time.Hour)
	z.BanExempt = []string{"192.0.2.0/24", "partner"} // httptest's client is 192.0.2.1
	h := &Handler{Zones: []*Zone{z}}
	provision(t, h)
	next := new(statusHandler)
	for _, c := range []struct {
		key, addr string
		banned    bool
	}{
		{"a", "192.0.2.1:1234", false},
		{"partner", "198.51.100.7:1234", false},
		{"b", "[::ffff:192.0.2.9]:1234", false}, // IPv4-mapped: the same network
		{"c", "198.51.100.7:1234", true},
	} {
		for i := range 3 {
			req := get("/", "X-API-Key", c.key)
			req.RemoteAddr = c.addr
			r := do(h, next, req)
			ra := r.header.Get("Retry-After")
			if i > 0 && (r.status != http.StatusTooManyRequests || (ra == "3600") != c.banned) {
				t.Errorf("key %s from %s, request %d: status %d, Retry-After %q; banned want %v", c.key, c.addr, i+1, r.status, ra, c.banned)
			}
		}
	}
}

func TestParseBanExempt(t *testing.T) {
	for _, bad := range []string{"key/with/slash", "203.0.113.0/24x", "10.0.0.0/33"} {
		if _, err := parseBanExempt([]string{bad}); err == nil {
			t.Errorf("%q accepted: a value with '/' must be a CIDR", bad)
		}
	}
	b, err := parseBanExempt([]string{"10.1.2.3/8", "::ffff:172.16.0.0/108", "2001:db8::1", "k"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "172.16.0.0/12", "2001:db8::1/128"}
	if len(b.nets) != len(want) || !b.keys["k"] || len(b.keys) != 1 {
		t.Fatalf("nets %v keys %v, want %v and k", b.nets, b.keys, want)
	}
	for i, p := range b.nets {
		if p.String() != want[i] {
			t.Errorf("network %d: %s, want %s", i, p, want[i])
		}
	}
}

// countingStore counts the decisions that reach the store.
type countingStore struct {
	limiter.Store
	calls atomic.Int64
}

func (s *countingStore) Decide(ctx context.Context, asks []limiter.Ask) ([]limiter.Result, error) {
	s.calls.Add(1)
	return s.Store.Decide(ctx, asks)
}

// TestHandlerBanDenyCacheBound: on one instance (its deny cache on), a key
// hammering past its quota is banned at its 3rd refusal (every offence
// counted, none lost in the cache), and 200 refusals cost the store the
// documented bound: the 1 allowed request, `after` = 3 refusals, then at
// most one call per second while banned.
func TestHandlerBanDenyCacheBound(t *testing.T) {
	h := banHandlers(t, 1, func(z *Zone) { z.Events, z.BanAfter, z.Ban, z.BanMax = 1, 3, caddy.Duration(time.Hour), 0 })[0]
	if h.deny == nil {
		t.Fatal("no deny cache")
	}
	cs := &countingStore{Store: h.store}
	h.store = cs
	next := new(statusHandler)
	key := "h-" + testenv.RandomID(6)
	start := time.Now()
	var statuses [3]string
	for i := range 200 {
		r := do(h, next, get("/", "X-API-Key", key))
		if i >= 1 && i <= 3 {
			statuses[i-1] = r.header.Get("Retry-After")
		}
	}
	elapsed := time.Since(start)
	if statuses[2] != "3600" || statuses[1] == "3600" {
		t.Errorf("Retry-After of refusals 1-3: %q, want the ban at the 3rd", statuses)
	}
	bound := int64(1+3) + int64(elapsed/banDenyFor) + 1
	if got := cs.calls.Load(); got > bound {
		t.Errorf("%d store calls for 200 requests in %s, want at most %d", got, elapsed, bound)
	} else {
		t.Logf("200 requests in %s: %d store calls (bound %d)", elapsed.Round(time.Millisecond), got, bound)
	}
}

package ratelimit

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/ratelimit/limiter"
)

// memoryHandler provisions h on the memory store with an injected clock.
func memoryHandler(t *testing.T, h *Handler) *clock {
	t.Helper()
	c := newClock()
	h.now = c.Now
	provision(t, h)
	return c
}

func checkHeaders(t *testing.T, got http.Header, want map[string]string) {
	t.Helper()
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		w, ok := want[name]
		g := got.Get(name)
		if !ok && g != "" {
			t.Errorf("%s = %q, want none", name, g)
		}
		if ok && g != w {
			t.Errorf("%s = %q, want %q", name, g, w)
		}
		if vs := got.Values(name); len(vs) > 1 {
			t.Errorf("%s sent %d times", name, len(vs))
		}
	}
}

func unix(c *clock, d time.Duration) string {
	return strconv.FormatInt(c.Now().Add(d).Unix(), 10)
}

func TestHeadersTokenBucket(t *testing.T) {
	h := &Handler{Zones: []*Zone{zone("api", 5, time.Minute)}}
	c := memoryHandler(t, h)
	next := new(statusHandler)

	// 5 per minute: one token every 12s; after the first request the
	// bucket is full again in 12s.
	res := do(h, next, get("/", "X-API-Key", "k1"))
	if res.status != http.StatusOK {
		t.Fatalf("status = %d, want 200", res.status)
	}
	checkHeaders(t, res.header, map[string]string{
		"RateLimit-Policy":      `"api";q=5;w=60`,
		"RateLimit":             `"api";r=4;t=12`,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "4",
		"X-RateLimit-Reset":     unix(c, 12*time.Second),
	})
	for range 4 {
		do(h, next, get("/", "X-API-Key", "k1"))
	}
	res = do(h, next, get("/", "X-API-Key", "k1"))
	if res.status != http.StatusTooManyRequests {
		t.Fatalf("6th request: status = %d, want 429", res.status)
	}
	checkHeaders(t, res.header, map[string]string{
		"RateLimit-Policy":      `"api";q=5;w=60`,
		"RateLimit":             `"api";r=0;t=12`,
		"X-RateLimit-Limit":     "5",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     unix(c, 12*time.Second),
		"Retry-After":           "12",
	})
	if z, _ := res.repl.GetString("http.ratelimit.zone"); z != "api" {
		t.Errorf("{http.ratelimit.zone} = %q, want api", z)
	}
	if ra, _ := res.repl.GetString("http.ratelimit.retry_after"); ra != "12" {
		t.Errorf("{http.ratelimit.retry_after} = %q, want 12", ra)
	}

	// 11.5s later the wait is 0.5s: Retry-After rounds up to 1, never 0.
	c.Add(11500 * time.Millisecond)
	res = do(h, next, get("/", "X-API-Key", "k1"))
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "1" {
		t.Errorf("after 11.5s: status %d Retry-After %q, want 429 and 1", res.status, res.header.Get("Retry-After"))
	}
	c.Add(500 * time.Millisecond)
	if res = do(h, next, get("/", "X-API-Key", "k1")); res.status != http.StatusOK {
		t.Errorf("after 12s: status %d, want 200", res.status)
	}
}

func TestHeadersTwoZonesLeastRemaining(t *testing.T) {
	perKey := zone("per_key", 10, time.Minute)
	perSecond := &Zone{Name: "burst-1", Key: "{http.request.header.X-API-Key}", Events: 3, Window: caddy.Duration(time.Second)}
	h := &Handler{Zones: []*Zone{perKey, perSecond}}
	c := memoryHandler(t, h)

	res := do(h, new(statusHandler), get("/", "X-API-Key", "k"))
	// per_key has 9 left, burst-1 has 2: burst-1 is reported; its bucket
	// is full again in 1/3 s, rounded up to 1.
	checkHeaders(t, res.header, map[string]string{
		"RateLimit-Policy":      `"per_key";q=10;w=60, "burst-1";q=3;w=1`,
		"RateLimit":             `"burst-1";r=2;t=1`,
		"X-RateLimit-Limit":     "3",
		"X-RateLimit-Remaining": "2",
		"X-RateLimit-Reset":     unix(c, time.Second),
	})
}

func TestHeadersOnlyAppliedZonesInPolicy(t *testing.T) {
	all := zone("all", 10, time.Minute)
	posts := &Zone{Name: "posts", Key: "{client_ip}", Events: 2, Window: caddy.Duration(time.Minute),
		MatchRaw: caddy.ModuleMap{"method": []byte(`["POST"]`)}}
	h := &Handler{Zones: []*Zone{all, posts}}
	memoryHandler(t, h)

	res := do(h, new(statusHandler), get("/"))
	if got := res.header.Get("RateLimit-Policy"); got != `"all";q=10;w=60` {
		t.Errorf("GET: RateLimit-Policy = %q, want only the zone that applied", got)
	}
	post := get("/")
	post.Method = http.MethodPost
	res = do(h, new(statusHandler), post)
	if got := res.header.Get("RateLimit-Policy"); got != `"all";q=10;w=60, "posts";q=2;w=60` {
		t.Errorf("POST: RateLimit-Policy = %q, want both zones", got)
	}
	if got := res.header.Get("RateLimit"); got != `"posts";r=1;t=30` {
		t.Errorf("POST: RateLimit = %q, want the posts zone", got)
	}
}

func TestHeadersFixedWindowReset(t *testing.T) {
	h := &Handler{Zones: []*Zone{{Name: "fw", Key: "k", Events: 2, Window: caddy.Duration(time.Minute), Algorithm: limiter.FixedWindow}}}
	c := memoryHandler(t, h)
	// The clock starts at a multiple of a minute; 20s into the window, the
	// window ends in 40s.
	c.Add(20 * time.Second)
	next := new(statusHandler)
	res := do(h, next, get("/"))
	checkHeaders(t, res.header, map[string]string{
		"RateLimit-Policy":      `"fw";q=2;w=60`,
		"RateLimit":             `"fw";r=1;t=40`,
		"X-RateLimit-Limit":     "2",
		"X-RateLimit-Remaining": "1",
		"X-RateLimit-Reset":     unix(c, 40*time.Second),
	})
	do(h, next, get("/"))
	res = do(h, next, get("/"))
	if res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "40" {
		t.Errorf("3rd: status %d Retry-After %q, want 429 and 40", res.status, res.header.Get("Retry-After"))
	}
}

func TestHeadersModes(t *testing.T) {
	tests := []struct {
		mode    string
		allowed map[string]string
		refused map[string]string
	}{
		{"ietf",
			map[string]string{"RateLimit-Policy": `"m";q=1;w=10`, "RateLimit": `"m";r=0;t=10`},
			map[string]string{"RateLimit-Policy": `"m";q=1;w=10`, "RateLimit": `"m";r=0;t=10`, "Retry-After": "10"}},
		{"legacy",
			map[string]string{"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "+10"},
			map[string]string{"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "+10", "Retry-After": "10"}},
		{"none",
			map[string]string{},
			map[string]string{"Retry-After": "10"}},
		{"both",
			map[string]string{"RateLimit-Policy": `"m";q=1;w=10`, "RateLimit": `"m";r=0;t=10`,
				"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "+10"},
			map[string]string{"RateLimit-Policy": `"m";q=1;w=10`, "RateLimit": `"m";r=0;t=10`,
				"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "+10", "Retry-After": "10"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			h := &Handler{Headers: tt.mode, Zones: []*Zone{{Name: "m", Key: "k", Events: 1, Window: caddy.Duration(10 * time.Second)}}}
			c := memoryHandler(t, h)
			fix := func(m map[string]string) map[string]string {
				out := map[string]string{}
				for k, v := range m {
					if v == "+10" {
						v = unix(c, 10*time.Second)
					}
					out[k] = v
				}
				return out
			}
			next := new(statusHandler)
			checkHeaders(t, do(h, next, get("/")).header, fix(tt.allowed))
			checkHeaders(t, do(h, next, get("/")).header, fix(tt.refused))
		})
	}
}

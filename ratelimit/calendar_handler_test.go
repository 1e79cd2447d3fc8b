package ratelimit

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/edgekit/caddy-edgekit/internal/redispool"
)

// calendarZone is a fixed_window calendar zone keyed by X-API-Key.
func calendarZone(name string, events int64, unit, tz string) *Zone {
	return &Zone{Name: name, Key: "{http.request.header.X-API-Key}", Events: events, Algorithm: "fixed_window", Calendar: unit, TZ: tz}
}

// A daily quota in Berlin beside a per-minute zone: refused until local
// midnight of the 25-hour day, with Retry-After and the RateLimit reset
// counting to it, and allowed again at midnight.
func TestHandlerCalendarDay(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	c := newClock()
	c.t = time.Date(2026, 10, 25, 23, 59, 50, 0, berlin)
	h := &Handler{Zones: []*Zone{zone("minute", 100, time.Minute), calendarZone("daily", 2, "day", "Europe/Berlin")}}
	h.now = c.Now
	provision(t, h)
	found := false
	for _, info := range zoneInfos() {
		if info.Name == "daily" && info.Calendar == "day" && info.TZ == "Europe/Berlin" && info.Window == "" {
			found = true
		}
	}
	if !found {
		t.Errorf("GET /ratelimit/zones does not list the daily zone with calendar day in Europe/Berlin")
	}
	next := new(statusHandler)
	for i := range 2 {
		if s := do(h, next, get("/", "X-API-Key", "k")).status; s != 200 {
			t.Fatalf("request %d: status %d", i, s)
		}
	}
	res := do(h, next, get("/", "X-API-Key", "k"))
	if res.status != 429 || res.header.Get("Retry-After") != "10" {
		t.Fatalf("3rd: status %d, Retry-After %q; want 429, 10 (to local midnight)", res.status, res.header.Get("Retry-After"))
	}
	if rl := res.header.Get("RateLimit"); !strings.Contains(rl, "t=10") {
		t.Errorf("RateLimit %q, want t=10", rl)
	}
	c.Add(10*time.Second - time.Millisecond)
	if s := do(h, next, get("/", "X-API-Key", "k")).status; s != 429 {
		t.Fatalf("1ms before midnight: status %d, want 429", s)
	}
	c.Add(time.Millisecond)
	res = do(h, next, get("/", "X-API-Key", "k"))
	if res.status != 200 {
		t.Fatalf("at midnight: status %d, want 200", res.status)
	}
	// The next day (24h) resets at its end.
	if rl := res.header.Get("RateLimit"); rl != `"daily";r=1;t=86400` {
		t.Errorf("RateLimit %q, want \"daily\";r=1;t=86400", rl)
	}
}

// Three handlers (three instances) on one Redis, a monthly quota of
// 1,000 beside a per-minute zone, 600 concurrent requests of one key
// across them, twice: exactly 1,000 allowed.
func TestHandlerCalendarMonthThreeInstances(t *testing.T) {
	cfg := sharedRedis(t)
	var hs []*Handler
	for range 3 {
		own := *cfg
		h := &Handler{Redis: (*redispool.Config)(&own), Timeout: caddy.Duration(5 * time.Second), Zones: []*Zone{zone("minute", 100000, time.Minute), calendarZone("monthly", 1000, "month", "America/New_York")}}
		provision(t, h)
		hs = append(hs, h)
	}
	next := new(statusHandler)
	allowed := 0
	for range 2 {
		counts := concurrently(t, 600, func(i int) int {
			return do(hs[i%3], next, get("/", "X-API-Key", "customer")).status
		})
		allowed += counts[http.StatusOK]
		if counts[http.StatusOK]+counts[http.StatusTooManyRequests] != 600 {
			t.Fatalf("statuses %v", counts)
		}
	}
	if allowed != 1000 {
		t.Fatalf("%d allowed of 1200, want exactly 1000", allowed)
	}
}
